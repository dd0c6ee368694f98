"""The one JUnit XML writer: ``mqtck conform``'s ``junit.xml`` and the Java-strategies gate's both come from here.

A CI reads both the same way (its failure summary, ``.ci/failures.py``, walks testcases for ``<failure>`` and the
``gates`` property), so one writer keeps the two files from drifting apart in shape: each testcase has its
properties, at most one ``<failure>`` (message and text), ``<error>`` (message and text: the test could not run,
its setup failed) or ``<skipped>`` (message), and the suite counts its tests, failures, errors and skips.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class JUnitCase:
    """One ``<testcase>``. ``failure`` and ``error`` are (message, text); ``skipped`` the skip's message; at most one
    is set."""

    classname: str
    name: str
    seconds: float = 0.0
    properties: tuple[tuple[str, str], ...] = ()
    failure: tuple[str, str] | None = None
    skipped: str | None = None
    error: tuple[str, str] | None = None


def testsuite_xml(suite_name: str, cases: Iterable[JUnitCase]) -> bytes:
    """A ``<testsuite>`` of ``cases``, with its tests, failures and skipped counts, as UTF-8 with a declaration."""
    suite = ET.Element("testsuite", name=suite_name)
    n = failures = errors = skipped = 0
    for c in cases:
        n += 1
        case = ET.SubElement(suite, "testcase", classname=c.classname, name=c.name, time=f"{c.seconds:.6f}")
        props = ET.SubElement(case, "properties")
        for name, value in c.properties:
            ET.SubElement(props, "property", name=name, value=value)
        if c.failure is not None:
            failures += 1
            message, text = c.failure
            ET.SubElement(case, "failure", message=message).text = text
        elif c.error is not None:
            errors += 1
            message, text = c.error
            ET.SubElement(case, "error", message=message).text = text
        elif c.skipped is not None:
            skipped += 1
            ET.SubElement(case, "skipped", message=c.skipped)
    suite.set("tests", str(n))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", str(skipped))
    return ET.tostring(suite, encoding="utf-8", xml_declaration=True)
