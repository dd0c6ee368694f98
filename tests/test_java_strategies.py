"""The Java client's allocation strategies (rocketmq-client 4.9.8 from Maven Central) behind the exec protocol.

Needs ``java`` and ``mvn`` (and Maven Central, once); without them the test says so and is skipped. The whole
gate (200 examples per property) runs in ``tox -e gate-rocketmq``; here the same checks run with fewer examples.
"""

from __future__ import annotations

import shutil

import pytest

from conformance.peers import PeerError
from conformance.peers.strategies import JAVA_STRATEGIES, command_line, gate_strategies

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
