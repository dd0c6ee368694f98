"""A real Apache Pulsar (``pulsar-4.0.7``, the standalone from Maven Central) recorded through ``mqtck record
--protocol pulsar`` and audited (issue 39's must-show): the real ``pulsar-client`` 3.13 producing batches to a
shared subscription of three consumers with small receiver queues, some messages negatively acknowledged
(tests/audit/pulsar_recording.py). The broker's batch overshoot is legal, so the audit finds no FLOW-2 breach and
no freeze, and exits 0 whatever FLOW-11 (the reference's stricter SHOULD) says of the Java broker's reads of
several entries."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.peers import peer_info
from conformance.peers.pulsar import served
from tests.audit.pulsar_recording import record

pytest.importorskip("pulsar", reason="not applicable: pip install 'mqtck[pulsar]' (pulsar-client 3.13)")
pytest.importorskip("pyspark")

PEER = "pulsar-4.0.7"
MESSAGES = 3_000


@pytest.mark.req("FLOW-2", "FLOW-3")
def test_a_real_pulsar_run_recorded_and_audited(tmp_path: Path) -> None:
    trace = tmp_path / "pulsar.jsonl"
    with served(peer_info(PEER)) as peer:
        recorded = record(peer.target.removeprefix("pulsar://"), trace, MESSAGES,
                          "persistent://public/default/mqtck-recorded")
    assert len(recorded.received) == MESSAGES
    assert recorded.summary["malformed"] == 0, recorded.summary
    events = Counter(r["event"] for r in recorded.rows)
    assert events["SEND"] == MESSAGES and events["SUBSCRIBE"] == 3, events
    code = main(["audit", str(trace), "--report-dir", str(tmp_path / "report")])
    cats = json.loads((tmp_path / "report" / "summary.json").read_text())["runs"]["pulsar"]["categories"]
    counts = {k: v["count"] for k, v in cats.items() if v["count"]}
    print(f"\nreal Pulsar, {MESSAGES} messages in {recorded.seconds:.1f} s: rows {dict(events)}; "
          f"audit exit {code}; findings {counts}")
    for name in ("permit-overrun", "permit-freeze"):
        assert cats[name]["judged"] and cats[name]["count"] == 0, (name, cats[name])
    assert code == 0, counts
