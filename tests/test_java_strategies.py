"""The Java client's allocation strategies (rocketmq-client 4.9.8 from Maven Central) behind the exec protocol.

Needs ``java`` and ``mvn`` (and Maven Central, once); without them the test says so and is skipped. The whole
gate (200 examples per property) runs in ``tox -e gate-rocketmq``; here the same checks run with fewer examples.
"""

from __future__ import annotations

import shutil

import pytest

from conformance.peers import PeerError
from conformance.peers.strategies import JAVA_STRATEGIES, command_line, gate_strategies, junit_xml

pytestmark = pytest.mark.skipif(not (shutil.which("java") and shutil.which("mvn")), reason="needs java and mvn")


@pytest.mark.req("ALLOC-9", "ALLOC-18")
def test_the_java_strategies_reproduce_the_golden_vectors_and_keep_their_promises() -> None:
    from conformance.peers.maven import client_classpath

    try:
        classpath = client_classpath("4.9.8")
    except PeerError as exc:  # the registry is out of reach: not a verdict on the strategies
        pytest.skip(f"rocketmq-client 4.9.8 could not be resolved: {exc}")
    verdicts, control = gate_strategies(classpath, examples=40)
    assert [v.java_class for v in verdicts] == list(JAVA_STRATEGIES)
    for v in verdicts:
        assert v.golden_lines > 500 and not v.golden_mismatches, (v.java_class, v.golden_mismatches[:2])
        assert v.passed, (v.java_class, v.properties)
    assert not control.passed and control.properties["partition"] == "fail", control.properties
    assert junit_xml(classpath, verdicts, control).count(b"<failure") == 0
    averagely = command_line(classpath, verdicts[0])
    assert averagely.startswith("mqtck strategy check --exec ") and averagely.endswith("--balance-bound 1")


def test_the_gates_requirement_entries_join_the_matrix(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Built from verdicts, not a JVM: a strategy that fails a check fails the requirements it proves."""
    import json

    from conformance.peers.strategies import StrategyVerdict, requirement_entries
    from conformance.report.matrix import build, load_run

    verdicts = [StrategyVerdict(c, b, 10, properties={"partition": "pass", "balance": "pass"})
                for c, b in JAVA_STRATEGIES.items()]
    verdicts[1].properties["balance"] = "fail"  # by circle
    entries = {e["id"]: e["status"] for e in requirement_entries(verdicts)}
    assert entries["ALLOC-11"] == "fail" and entries["ALLOC-3"] == entries["ALLOC-10"] == "pass"
    assert entries["ALLOC-1"] == entries["ALLOC-15"] == "not-applicable"
    (tmp_path / "summary.json").write_text(json.dumps(
        {"implementation": "java-strategies", "verdict": "fail", "requirements": requirement_entries(verdicts)}))
    matrix = build([load_run(tmp_path)])
    assert matrix["columns"][0]["counts"]["fail"] == 1 and matrix["columns"][0]["must_fail"] == 1


def test_the_gates_junit_file_fails_each_broken_check_and_an_uncaught_control() -> None:
    """``--junit`` of the strategies gate: one testcase per strategy's golden replay and property, and one for the
    control; a mismatch, a failed property and a control that passes are each a gating failure naming the command
    that reproduces it."""
    import xml.etree.ElementTree as ET

    from conformance.peers.strategies import StrategyVerdict

    verdicts = [StrategyVerdict(c, b, 10, properties={"partition": "pass", "balance": "pass"})
                for c, b in JAVA_STRATEGIES.items()]
    verdicts[0].golden_mismatches.append("case-3 currentCID='c1': expected [q0] got [q1]")
    verdicts[1].properties["balance"] = "fail"
    control = StrategyVerdict("BrokenAveragely", "averagely", properties={"partition": "pass"})
    suite = ET.fromstring(junit_xml(["/x.jar"], verdicts, control))
    assert int(suite.get("tests")) == 3 * len(verdicts) + 1 and suite.get("failures") == "3"
    failed = {(c.get("classname"), c.get("name")): c.find("failure") for c in suite if c.find("failure") is not None}
    assert set(failed) == {(verdicts[0].java_class, "golden"), (verdicts[1].java_class, "balance"),
                           ("BrokenAveragely", "control is caught")}
    assert "1 of 10 golden vectors differ: case-3" in failed[(verdicts[0].java_class, "golden")].get("message")
    assert all(f.text.startswith("reproduce: mqtck strategy check --exec ") for f in failed.values())
    assert {p.get("value") for p in suite.iter("property") if p.get("name") == "gates"} == {"true"}
