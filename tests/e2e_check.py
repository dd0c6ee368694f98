"""``mqtck bench e2e`` run and asserted clean, the same way for every client: shared by the Java and Go runs
(tests/peers/test_e2e_recorded.py, tox -e peers) and the C++ run (tests/interop/test_e2e_cpp.py, tox -e
interop-remoting, the only env with the C++ client's binding), so that what "clean" means cannot drift apart."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

#: The real brokers each client runs against: at least once is judged end to end on every one (issue 36).
BROKERS = ("rocketmq-4.9.7", "rocketmq-5.5.0")
#: The rows every recorded deployment has: the recorder's (SEND ... SUBSCRIBE), the consumers' CONSUME, and the
#: harness's CRASH and END.
ROWS = {"SEND", "PULL_REQ", "PULL_RESP", "COMMIT", "SUBSCRIBE", "CONSUME", "CRASH", "END"}
#: The rows of a client that records its rebalances (Java and Go: the default allocation wrapped).
REBALANCE_ROWS = {"ASSIGN", "REVOKE"}


def run_e2e(tmp_path: Path, *client: str, messages: int, rate: int, rebalance_rows: bool = True,
            shutdown_may_hang: bool = False) -> dict[str, Any]:
    """``mqtck bench e2e`` with ``client`` (extra arguments, e.g. ``--client go``) at ``messages`` and ``rate``,
    asserted clean: (almost) every send acknowledged (at most one in a thousand may time out on CI's loaded
    machine, each one's exception in the run's producer.log; an unacknowledged send promises nothing) and every
    acknowledged one consumed, every message the broker stored consumed OK (the harness's per-message check, the
    group's first pull of every queue at offset 0), the kill and the join happened, the audit exits 0 with no MUST
    violation, no loss and no duplicate without a cause, and the trace holds every kind of row the run should
    produce, ASSIGN and REVOKE too unless ``rebalance_rows`` is False (a client that cannot record them), so that
    a clean verdict is not the silence of a missing recorder. No consumer's shutdown may hang (the harness then
    kills it) unless ``shutdown_may_hang``: a client known to hang there (rocketmq-client-cpp 1.2.3) is judged on
    at least once all the same, since what it consumed is in its trace before the hang."""
    out = tmp_path / "e2e.json"
    run = subprocess.run([sys.executable, "-m", "conformance.cli", "bench", "e2e", *client, "--messages",
                          str(messages), "--rate", str(rate), "--keep", str(tmp_path / "run"), "--out", str(out)],
                         capture_output=True, text=True, timeout=1_200)
    assert run.returncode == 0, run.stderr[-3000:]
    result: dict[str, Any] = json.loads(out.read_text())["result"]
    produced = result["producer"]
    assert produced["acked"] + produced["failed"] == messages and produced["failed"] <= messages // 1_000, produced
    assert produced["acked"] <= result["distinct_consumed"] <= messages, (produced, result["distinct_consumed"])
    delivery = result["delivery"]
    assert delivery["sent_not_consumed"] == 0, delivery
    assert delivery["first_pull_offsets"] and set(delivery["first_pull_offsets"].values()) == {0}, delivery
    assert {"consumer 1 killed_s", "consumer 3 started_s"} <= set(result["events"])
    bad = ("exited_early", "never_consumed") + (() if shutdown_may_hang else ("shutdown_hung",))
    assert not [key for key in result["events"] if key.endswith(bad)], result["events"]
    audit = result["audit"]
    assert audit["exit_code"] == 0 and audit["must_violations"] == 0, (audit, violation_examples(result))
    assert "lost" not in audit["findings"] and audit["duplicates_by_cause"]["unknown"] == 0, audit
    rows = [json.loads(line) for line in Path(result["trace"]).read_text().splitlines()]
    assert {r["event"] for r in rows} >= ROWS | (REBALANCE_ROWS if rebalance_rows else set())
    return result


def violation_examples(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The audit's example findings of every violating category (their values and witness events), so that a
    failed run says what the audit saw, not only how many."""
    summary = json.loads((Path(result["report"]) / "summary.json").read_text())
    return [{"run": run, "category": name, "examples": cat.get("examples", [])[:3]}
            for run, body in summary["runs"].items() for name, cat in body["categories"].items()
            if cat.get("violation") and cat.get("count")]
