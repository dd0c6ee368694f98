"""The official Java client's delay and transaction examples against ``mqtck broker --remoting`` (issue 41).

``DelayTxnProbe.java`` (rocketmq-client 4.9.8 from Maven Central) sends a level-3 message and three transactional
messages whose local transaction answers COMMIT, ROLLBACK and UNKNOW (its check answers COMMIT), with a push
consumer on both topics, and prints when each was sent, received and checked. Real time: the broker runs with its
defaults, so the unknown transaction is checked at the first check round after its 6 s timeout (every 60 s).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conformance.peers.java import java_program
from conformance.peers.maven import app_client_classpath
from conformance.targets.launch import launch_broker

CLIENT_VERSION = "4.9.8"
PROBE = Path(__file__).resolve().parent / "DelayTxnProbe.java"
#: How long the probe runs: one check round (60 s) after the half's 6 s timeout, plus the JVM's start and a margin.
RUN_MS = 100_000
#: Level 3 of "1s 5s 10s ...".
LEVEL_3_MS = 10_000
#: The schedule service's and the consumer's own delays on a loaded machine: the arrival is judged within this.
LATE_MS = 5_000


@pytest.mark.req("DELAY-1", "TXN-1", "TXN-2.checked")
def test_the_java_clients_delay_and_transaction_examples(tmp_path: Path) -> None:
    broker = launch_broker("remoting", tmp_path / "data")
    try:
        program = java_program(PROBE, app_client_classpath(CLIENT_VERSION), "the delay and transaction probe")
        run = subprocess.run(["java", f"-Duser.home={tmp_path}", *program, broker.address, str(RUN_MS)],
                             capture_output=True, text=True, timeout=RUN_MS / 1000 + 120)
    finally:
        broker.stop()
    assert run.returncode == 0, run.stderr[-2000:]
    events = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    (sent_at,) = [e["ms"] for e in events if (e["event"], e["body"]) == ("sent", "delay-level-3")]
    received = {e["body"]: e["ms"] for e in events if e["event"] == "received"}
    checked = [e["body"] for e in events if e["event"] == "checked"]
    print(json.dumps(events, indent=1))  # what arrives and when: the closing note reads it from -s
    delay = received.get("delay-level-3", -1) - sent_at
    assert LEVEL_3_MS - 100 <= delay <= LEVEL_3_MS + LATE_MS, f"DELAY-1: the level-3 message arrived {delay} ms after"
    assert "tx-commit" in received, "TXN-1: the committed transaction was not delivered"
    assert "tx-rollback" not in received, "TXN-1: the rolled-back transaction was delivered"
    assert checked == ["tx-unknown"], f"TXN-2: the broker checked {checked}"
    assert "tx-unknown" in received, "TXN-2: the transaction the check committed was not delivered"
