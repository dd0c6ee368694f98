"""A gate's run without a broker: per-test results as ``mqtck gate rocketmq-5.5.0`` would have them (every
requirement passes except the peer's reviewed deviations, which fail; two of its intermittent ones pass this run),
fed to the report builder with the peer's expectations, at the throwaway address a gate reaches a served broker at.
What the reports make of a gate's run is then tested in seconds, and never needs Java or a port."""

from __future__ import annotations

from pathlib import Path

from conformance import expectations, report, spec
from conformance.peers import peer_info

PEER = "rocketmq-5.5.0"
#: Where a gate reaches its served broker: a port of the moment and the runner's control channel.
SERVED_AT = "remoting://127.0.0.1:52411?control=127.0.0.1:52412"
#: The calls a failing test carries (``conformance.suite.calls``), oldest first.
CALLS = ["create_topic('PT', 1) -> None", "send('PT', 0, b'x', 'A') -> SendReceipt(msg_id='M1', queue_offset=0)",
         "advance(5001) -> None"]


def results(expected: expectations.Expectations) -> list[report.TestResult]:
    """One test per requirement: failed for the peer's deviations (but the first two intermittent ones, which
    passed this run), passed otherwise."""
    passing_intermittent = [e.id for e in expected.entries.values() if e.intermittent][:2]
    out = []
    for rid in spec.requirements():
        nodeid = f"conformance/suite/test_x.py::test_{rid.lower().replace('-', '_')}"
        if rid in expected.entries and rid not in passing_intermittent:
            summary = f"assert 'PULL_NOT_FOUND' == 'SUCCESS' ({rid})"
            out.append(report.TestResult(nodeid, [rid], "failed", 0.2, f"Traceback ...\nE   {summary}", summary,
                                         [[report.CALLS, CALLS]]))
        else:
            out.append(report.TestResult(nodeid, [rid], "passed", 0.1))
    return out


def write_gate_run(report_dir: Path, peer: str = PEER) -> Path:
    """The run directory a gate of ``peer`` writes (summary.json, junit.xml, report.html), from synthetic results."""
    from conformance.commands.conform import ConformOptions, run_name

    info = peer_info(peer)
    expected = expectations.load_option(peer)
    assert expected is not None
    options = ConformOptions(target=SERVED_AT, implementation=info.name, title=info.title, expect=peer)
    rs = results(expected)
    vs = report.verdicts(rs, expected)
    run_dir = report_dir / f"20261128-221346-{run_name(options)}"
    extra = {"duration_s": 312.4, "run": run_dir.name, "implementation": info.name, "title": info.title,
             "profiles": [], "slow": False, "expectations": expected.name}
    doc = report.summary(SERVED_AT, ["pop", "pull"], vs, rs, extra)
    report.publish(report_dir, run_dir, doc, vs)
    return run_dir
