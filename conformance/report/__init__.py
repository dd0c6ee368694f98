"""Conformance reports: per-requirement verdicts from per-test results, as JSON, JUnit XML and HTML.

A requirement's status for a run:

* ``fail``: a test marked with it failed;
* ``pass``: at least one test marked with it passed and none failed;
* ``not-applicable``: every test marked with it ran and skipped itself: the target lacks a capability, or the
  case could not be reached (a race that never happened), with the skip's reason;
* ``not-covered``: no test of this suite is marked with it (it is proven by the project's own
  tests and property suites against the reference, not through a target);
* ``expected-fail``: it failed, and the implementation's expectations (``conformance.expectations``) list it
  as a reviewed deviation: reported, not gating;
* ``unexpected-pass``: the expectations list it, but it passed (the entry is stale). An entry marked
  ``intermittent`` (a deviation that shows in some runs only) makes a pass ``pass``, the entry still attached;
* ``partial``: a requirement that lists clauses (``conformance.spec``) whose tests passed for some clauses while
  others could not be judged on this target (each clause's status and reason are in ``clauses``). Not a pass:
  a PASS means every clause the requirement states was observed;
* ``reference-only``: a requirement on the reference's own records (``scope = "reference"``) that this target
  cannot show; not a capability it lacks.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from conformance import spec
from conformance.expectations import Expectations
from conformance.report import plots
from conformance.report.junit import JUnitCase, testsuite_xml

#: Every status a requirement can have in a run, in the order a report lists them, with what it means.
STATUSES: dict[str, str] = {
    "fail": "a test of this requirement failed",
    "error": "a test of this requirement could not run (its setup failed): not judged, and the run does not pass",
    "expected-fail": "failed: a reviewed deviation of this implementation (not gating)",
    "unexpected-pass": "listed as a deviation, but passed: the entry is stale",
    "pass": "every test of this requirement passed, every clause judged",
    "partial": "the clauses judged passed; others could not be judged on this target (not a pass)",
    "not-applicable": "the target lacks a capability the tests need, or the case could not be reached",
    "reference-only": "about the reference's own records: no other target can show it",
    "not-covered": "no test of this suite: proven by the project's own tests and property suites",
}


@dataclass
class TestResult:
    nodeid: str
    reqs: list[str]
    outcome: str
    duration: float
    message: str = ""
    #: One line: the failing assertion (or the skip reason); ``message`` has the full traceback.
    summary: str = ""
    #: ``[name, value]`` pairs the test recorded with ``record_property``.
    observations: list[list[Any]] = field(default_factory=list)


@dataclass
class Verdict:
    id: str
    level: str
    family: str
    sentence: str
    source: str
    capability: str
    status: str
    tests: list[dict[str, Any]] = field(default_factory=list)
    #: The expectation entry (reason, source, repro, intermittent) when the implementation's expectations list this ID.
    expectation: dict[str, Any] | None = None
    profile: str = ""
    #: Per clause of a requirement that lists clauses: ``{"key", "text", "status", "reason"}``.
    clauses: list[dict[str, Any]] = field(default_factory=list)


def load_results(paths: Iterable[Path]) -> list[TestResult]:
    out = []
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                out.append(TestResult(**json.loads(line)))
    return out


def _status(tests: list[TestResult]) -> str:
    """One clause's (or an unsplit requirement's) status from the tests that judge it."""
    if any(t.outcome == "failed" for t in tests):
        return "fail"
    # A test whose setup failed judged nothing: neither a failure of the target nor, beside passing tests, a pass.
    if any(t.outcome == "error" for t in tests):
        return "error"
    if any(t.outcome == "passed" for t in tests):
        return "pass"
    # A test that ran and skipped itself (a capability missing, or a race that never happened) did drive the
    # requirement through the target: it was not judged, which is "not applicable" with the skip's reason, never
    # "not covered" (no test of the suite) and never a pass.
    return "not-applicable" if tests else "not-covered"


def _clause_verdicts(req: spec.Requirement, tests: list[TestResult]) -> list[dict[str, Any]]:
    """Each clause's status: from the tests marked with it and those marked with the bare ID (all clauses)."""
    out = []
    for key, text in req.clauses:
        mine = [t for t in tests if f"{req.id}.{key}" in t.reqs or req.id in t.reqs]
        status = _status(mine)
        # Why a clause was not judged (a passing clause needs none, whatever its other tests said).
        why = {"fail": "failed", "error": "error"}.get(status, "skipped")
        reason = "" if status == "pass" else next((t.summary for t in mine if t.outcome == why and t.summary), "")
        out.append({"key": key, "text": text, "status": status,
                    "reason": reason or ("no test of this suite judges it" if status == "not-covered" else "")})
    return out


def _combine(clauses: list[dict[str, Any]]) -> str:
    """A requirement's status from its clauses': ``pass`` only when every clause passed."""
    statuses = {c["status"] for c in clauses}
    if "fail" in statuses:
        return "fail"
    if "error" in statuses:
        return "error"
    if statuses == {"pass"}:
        return "pass"
    if "pass" in statuses:
        return "partial"
    return "not-applicable" if "not-applicable" in statuses else "not-covered"


def verdicts(results: list[TestResult], expected: Expectations | None = None) -> list[Verdict]:
    _, reqs = spec.load()
    entries = expected.entries if expected is not None else {}
    by_req: dict[str, list[TestResult]] = {}
    for r in results:
        for rid in {spec.split_marker(m)[0] for m in r.reqs}:
            by_req.setdefault(rid, []).append(r)
    out = []
    for req in reqs.values():
        tests = by_req.get(req.id, [])
        clauses = _clause_verdicts(req, tests) if req.clauses else []
        status = _combine(clauses) if clauses else _status(tests)
        if req.scope == "reference" and status == "not-applicable":
            status = "reference-only"
        entry = entries.get(req.id)
        if entry is not None and status == "fail":
            status = "expected-fail"
        elif entry is not None and status == "pass" and not entry.intermittent:
            status = "unexpected-pass"
        out.append(
            Verdict(
                req.id, req.level, req.family, req.sentence, req.source, req.capability, status,
                [asdict(t) for t in tests], asdict(entry) if entry is not None else None, req.profile, clauses,
            )
        )
    return out


def gates(v: Verdict, profiles: Iterable[str] = ()) -> bool:
    """Whether ``v`` gates: a MUST, or a SHOULD of a profile the target opted into."""
    return v.level == "MUST" or bool(v.profile and v.profile in set(profiles))


def exit_code(vs: list[Verdict], profiles: Iterable[str] = ()) -> int:
    """0 when every applicable gating requirement passed, is an expected fail or is not covered; 1 otherwise (a
    gating requirement failed, or could not be judged because a test's setup failed)."""
    chosen = tuple(profiles)
    return 1 if any(v.status in ("fail", "error") and gates(v, chosen) for v in vs) else 0


def verdict_word(vs: list[Verdict], profiles: Iterable[str] = ()) -> str:
    """The run's one word: ``pass``; ``fail`` when a gating requirement failed; else ``error`` when one could not
    be judged (a test's setup failed: the harness or the target's environment, not a judged failure)."""
    if exit_code(vs, profiles) == 0:
        return "pass"
    chosen = tuple(profiles)
    return "fail" if any(v.status == "fail" and gates(v, chosen) for v in vs) else "error"


def summary(target: str, capabilities: Iterable[str], vs: list[Verdict], results: list[TestResult],
            extra: dict[str, Any] | None = None, profiles: Iterable[str] = ()) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for v in vs:
        counts[v.status] = counts.get(v.status, 0) + 1
    return {
        "target": target,
        "capabilities": sorted(capabilities),
        "verdict": verdict_word(vs, profiles),
        "counts": counts,
        "tests": {"total": len(results), "failed": sum(r.outcome == "failed" for r in results),
                  "errors": sum(r.outcome == "error" for r in results)},
        "requirements": [asdict(v) for v in vs],
        "observations": observations(results),
        **(extra or {}),
    }


def observations(results: list[TestResult]) -> dict[str, list[Any]]:
    """Every recorded value by name, across the run's tests (lists are flattened)."""
    out: dict[str, list[Any]] = {}
    for r in results:
        for name, value in r.observations:
            if name == CALLS:
                continue
            out.setdefault(str(name), []).extend(value if isinstance(value, list) else [value])
    return out


def junit_xml(title: str, vs: list[Verdict], profiles: Iterable[str] = ()) -> bytes:
    """One testcase per (requirement, test) pair; uncovered requirements are skipped testcases. The testsuite is
    named after what was judged (``title``: ``Apache RocketMQ 4.9.7``), not after the address it was reached at.

    Each testcase carries its requirement, level and whether it gates (``gates``: ``true`` or ``false``) as JUnit
    properties: a failed SHOULD is a ``<failure>`` like any other, and a reader that decides the build from the
    file (CI's failure summary, ``.ci/failures.py``) tells it from a failure that makes the run exit 1.
    """
    chosen = tuple(profiles)
    return testsuite_xml(f"mqtck conform {title}", (case for v in vs for case in _junit_cases(v, chosen)))


def _junit_cases(v: Verdict, chosen: tuple[str, ...]) -> Iterable[JUnitCase]:
    """A verdict's testcases: one per test, or one skipped testcase when no test of the suite covers it."""
    tests = v.tests or [{"nodeid": "(no test in this suite)", "outcome": "skipped", "duration": 0.0,
                         "message": v.status}]
    props = (("requirement", v.id), ("level", v.level), ("gates", str(gates(v, chosen)).lower()))
    for t in tests:
        failure = skipped = error = None
        if t["outcome"] == "error":
            what = t.get("summary") or "the test's setup failed"
            error = (f"{v.id} ({v.level}) not judged: {what}", f"{v.id} ({v.level}): {v.sentence}\n\n{t['message']}")
        elif t["outcome"] == "failed" and v.status == "expected-fail" and v.expectation:
            skipped = f"expected fail: {v.expectation['reason']}"
        elif t["outcome"] == "failed":
            # The message is what failed (the assertion); the requirement and the traceback are the text.
            what = t.get("summary") or v.sentence
            failure = (f"{v.id} ({v.level}): {what}", f"{v.id} ({v.level}): {v.sentence}\n\n{t['message']}")
        elif t["outcome"] == "skipped":
            skipped = t["message"] or v.status
        yield JUnitCase(f"{v.family}.{v.id}", t["nodeid"], t["duration"], props, failure, skipped, error)


#: The observation a failed suite test carries: its last calls on the target (conformance.suite.calls).
CALLS = "calls"
#: Observations a passing test records about a real deviation it tolerates (its requirement's note says which and
#: why): printed with the verdicts, so a pass never hides them.
NOTICED: dict[str, str] = {
    "pop.lost_wakeups": "POP-12: a held pop missed a matching arrival's wake-up",
}


def noticed(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """The run's :data:`NOTICED` observations as (what, value) lines, for the console and the HTML report alike."""
    observed = doc.get("observations", {})
    return [(what, str(value)) for name, what in NOTICED.items() for value in observed.get(name, [])]


#: ``assert LEFT == RIGHT`` as pytest reports it: the suite's tests put what the target answered on the left.
_COMPARISON = re.compile(r"^(?:E\s+)?assert (?P<left>.+?) == (?P<right>.+)$", re.MULTILINE)


def failure_causes(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The run's failures by cause: one entry per failing test (one assertion), with every requirement it breaks,
    most gating first, and the compared values when the assertion compared two (``observed`` / ``expected``)."""
    causes: dict[str, dict[str, Any]] = {}
    for r in doc["requirements"]:
        if r["status"] not in ("fail", "expected-fail"):
            continue
        for t in r["tests"]:
            if t["outcome"] != "failed":
                continue
            cause = causes.get(t["nodeid"])
            if cause is None:  # the test's own parts, once: every requirement it carries has the same result
                cause = causes[t["nodeid"]] = {
                    "nodeid": t["nodeid"], "test": t["nodeid"].split("::")[-1], "summary": t["summary"],
                    "message": t["message"], "requirements": [], "expected_fail": True,
                    "calls": next((v for k, v in t.get("observations", []) if k == CALLS), []),
                }
                compared = _COMPARISON.search(t["summary"]) or _COMPARISON.search(t["message"])
                if compared is not None:
                    cause["observed"], cause["expected"] = compared["left"].strip(), compared["right"].strip()
            cause["requirements"].append(r)
            cause["expected_fail"] &= r["status"] == "expected-fail"
    order = {"MUST": 0, "SHOULD": 1}
    for cause in causes.values():
        cause["requirements"].sort(key=lambda r: (order.get(r["level"], 2), r["id"]))
    return sorted(causes.values(), key=lambda c: (c["expected_fail"], order.get(c["requirements"][0]["level"], 2),
                                                  c["nodeid"]))


def family_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Per family: its title, its requirements and their counts by status; ``open`` when a reader must look."""
    families, _ = spec.load()
    rows = []
    for name, fam in families.items():
        reqs = [r for r in doc["requirements"] if r["family"] == name]
        if not reqs:
            continue
        counts: dict[str, int] = {}
        for r in reqs:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        rows.append({"name": name, "title": fam.title, "requirements": reqs,
                     "counts": " · ".join(f"{counts[s]} {s}" for s in STATUSES if s in counts),
                     "open": bool(counts.get("fail") or counts.get("error") or counts.get("unexpected-pass"))})
    return rows


def title(doc: dict[str, Any]) -> str:
    """What a run judged, for a reader: the implementation's name and version (``Apache RocketMQ 4.9.7``), else its
    label, else the target (runs written before titles existed have neither)."""
    return str(doc.get("title") or doc.get("implementation") or doc["target"])


def tally(doc: dict[str, Any]) -> list[str]:
    """The header's words after the verdict: failures apart from reviewed deviations, so that a PASS never sits
    beside a bare "6 failed" (``0 failed · 6 expected fails · 1 intermittent``)."""
    reqs = doc["requirements"]
    failed = sum(r["status"] == "fail" for r in reqs)
    deviations = [r for r in reqs if r.get("expectation")]
    intermittent = [r for r in deviations if r["expectation"].get("intermittent")]
    expected = sum(r["status"] == "expected-fail" for r in deviations if r not in intermittent)
    words = [f"{failed} failed", f"{expected} expected fail{'s' if expected != 1 else ''}"]
    if intermittent:
        shown = sum(r["status"] == "expected-fail" for r in intermittent)
        words.append(f"{len(intermittent)} intermittent ({shown} shown this run)")
    stale = sum(r["status"] == "unexpected-pass" for r in reqs)
    if stale:
        words.append(f"{stale} unexpected pass{'es' if stale != 1 else ''}")
    return words


def seconds_text(seconds: float) -> str:
    """A duration as a reader says it: ``21.5 s``, ``5 min 3 s``, ``1 h 2 min``."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    return f"{minutes // 60} h {minutes % 60} min"


def took(doc: dict[str, Any]) -> str:
    """How long the run took: the suite, and the seeded faults' runs apart when ``--mutants`` ran them (they are
    most of the wall time, and the suite's own seconds alone would hide them)."""
    suite = seconds_text(float(doc["duration_s"]))
    mutants = doc.get("mutants", {}).get("duration_s")
    return suite if mutants is None else f"{suite} (suite) + {seconds_text(float(mutants))} (mutants)"


#: A remembered call as ``conformance.suite.calls`` writes it: ``name(arguments) -> answer``.
_CALL = re.compile(r"^(?P<name>\w+)\((?P<args>.*?)\) -> (?P<answer>.*)$", re.DOTALL)
#: What a call on the target does, in words (``conformance.targets``' methods); the rest show their own names.
_CALL_WORDS: dict[str, str] = {
    "advance": "advance the clock {} ms", "create_topic": "create the topic", "send": "send to",
    "send_batch": "send a batch to", "start_pull": "start a pull of", "start_pull_racing": "start a racing pull of",
    "pop": "pop from", "ack": "acknowledge", "change_invisible": "change the invisible time of",
    "commit_offset": "commit the offset", "query_offset": "query the offset of", "query_assignment": "query the "
    "assignment of", "heartbeat": "heartbeat", "unregister": "unregister", "min_max": "ask the min and max offsets "
    "of", "run_retention": "run retention", "restart": "restart the broker", "configure": "set the broker's",
    "expire_retention": "expire retention", "flow": "grant permits:", "redeliver": "ask to redeliver",
}


def readable_call(line: str) -> str:
    """A remembered call in words: ``advance(5001) -> None`` reads ``advance the clock 5001 ms (no answer)``."""
    call = _CALL.match(line)
    if call is None:
        return line
    name, args, answer = call["name"], call["args"], call["answer"]
    words = _CALL_WORDS.get(name, name.replace("_", " "))
    request = words.format(args) if "{}" in words else f"{words} {args}".rstrip()
    if answer == "None":
        return f"{request} (no answer)"
    if answer == "(pending)":
        return f"{request} (still unanswered when the test failed)"
    if answer.startswith("raised "):
        return f"{request}: {answer}"
    return f"{request}: answered {answer}"


def html(doc: dict[str, Any]) -> str:
    # The template's name ends in .j2: escaping must be asked for by that extension (test messages hold '<').
    env = Environment(loader=PackageLoader("conformance.report"), autoescape=select_autoescape(("html", "j2")))
    env.filters["readable_call"] = readable_call
    obs = doc.get("observations", {})
    latencies = [float(v) for v in obs.get("lpoll.wake_latency_ms", [])]
    return env.get_template("report.html.j2").render(
        doc=doc, families=family_rows(doc), causes=failure_causes(doc), latencies=latencies, noticed=noticed(doc),
        statuses=STATUSES, title=title(doc), tally=tally(doc), took=took(doc) if "duration_s" in doc else "",
        latency_svg=plots.histogram_svg(latencies, "ms") if latencies else "",
        balance=plots.balance_rows(obs.get("alloc.balance", [])),
    )


def write_all(run_dir: Path, doc: dict[str, Any], vs: list[Verdict], junit_path: Path | None = None) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "summary.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    write_junit(run_dir, junit_xml(title(doc), vs, doc.get("profiles") or ()), junit_path)
    (run_dir / "report.html").write_text(html(doc), encoding="utf-8")


def write_junit(run_dir: Path, xml: bytes, junit_path: Path | None = None) -> None:
    """The run's ``junit.xml``, and a copy at ``junit_path`` (``--junit``), whose folder may not exist yet."""
    (run_dir / "junit.xml").write_bytes(xml)
    if junit_path is not None:
        junit_path.parent.mkdir(parents=True, exist_ok=True)
        junit_path.write_bytes(xml)


def publish(
    report_dir: Path, run_dir: Path, doc: dict[str, Any], vs: list[Verdict], junit_path: Path | None = None
) -> None:
    """Write the run's three files and point ``<report_dir>/latest`` at it (a CI links to that path)."""
    write_all(run_dir, doc, vs, junit_path)
    point_latest(report_dir, run_dir)


def point_latest(report_dir: Path, run_dir: Path) -> None:
    """``<report_dir>/latest`` -> the run: what ``mqtck matrix REPORT_DIR`` and a CI's links read."""
    latest = report_dir / "latest"
    if latest.is_symlink() or latest.exists():
        latest.unlink()
    os.symlink(run_dir.name, latest)
