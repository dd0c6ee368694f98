"""``mqtck record --protocol pulsar`` in front of ``mqtck broker --pulsar``, with the real ``pulsar-client`` 3.13:
batches on a shared subscription with three consumers of small receiver queues and some negative acks
(tests/audit/pulsar_recording.py). The trace the proxy writes holds every message sent, the subscriptions, the
permits and every message dispatched with its batch position, and the audit of it finds no permit finding: the
batches' overshoot is legal (FLOW-2) and the reference never starts an entry at 0 permits (FLOW-11), seen from the
wire."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.targets.launch import launch_broker
from tests.audit.pulsar_recording import BATCH, NACK_EVERY, record

pytest.importorskip("pulsar", reason="not applicable: pip install 'mqtck[pulsar]' (pulsar-client 3.13)")
pytest.importorskip("pyspark")

MESSAGES = 3_000


@pytest.mark.req("FLOW-2", "FLOW-11")
def test_recorded_pulsar_client_run_audits_without_permit_findings(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    broker = launch_broker("pulsar", tmp_path / "data")
    trace = tmp_path / "recorded.jsonl"
    try:
        recorded = record(broker.url.removeprefix("pulsar://"), trace, MESSAGES, "recorded")
    finally:
        broker_err = broker.stop()
    assert "Traceback" not in broker_err, broker_err
    assert len(recorded.received) == MESSAGES
    assert recorded.summary["malformed"] == 0, recorded.summary
    rows = recorded.rows
    events = Counter(r["event"] for r in rows)
    assert events["SEND"] == MESSAGES and events["SUBSCRIBE"] == 3 and events["UNSUBSCRIBE"] == 3, events
    assert events["DISPATCH"] >= MESSAGES + MESSAGES // NACK_EVERY and events["FLOW"] > 0, events
    sent = {r["msg_id"] for r in rows if r["event"] == "SEND"}
    assert {r["msg_id"] for r in rows if r["event"] == "DISPATCH"} == sent, "DISPATCH names the messages SEND named"
    sizes = Counter(json.loads(r["detail"])["batch_size"] for r in rows if r["event"] == "DISPATCH")
    assert sizes[BATCH] > 0, f"batches reached the consumers whole: {sizes}"
    assert {r["client_id"] for r in rows if r["event"] == "DISPATCH"} == {"c0", "c1", "c2"}

    code = main(["audit", str(trace), "--report-dir", str(tmp_path / "report")])
    audit = json.loads((tmp_path / "report" / "summary.json").read_text())
    cats = audit["runs"]["pulsar"]["categories"]
    for name in ("permit-overrun", "permit-entry-overrun", "permit-freeze"):
        assert cats[name]["judged"] and cats[name]["count"] == 0, (name, cats[name])
    assert code == 0, {k: v["count"] for k, v in cats.items() if v["count"]}
