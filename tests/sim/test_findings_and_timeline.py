"""Every simulation reports one Finding shape, naming a real requirement, and writes one kind of timeline."""

from __future__ import annotations

import json

from conformance.spec import requirements
from reference.sim.findings import Finding
from reference.sim.judges import PERMIT_EVENTS, PERMIT_REQUIREMENTS, POP_EVENTS, POP_REQUIREMENTS, audit_pop
from reference.sim.timeline import format_timeline


def _row(seq: int, ts_ms: int, source: str, event: str, **cols: object) -> dict:
    return {"schema_version": 1, "run": "r", "ts": ts_ms * 1000, "source": source, "seq": seq, "event": event,
            **cols}


def test_every_anomaly_of_the_pop_and_permit_simulations_names_a_requirement_of_the_spec() -> None:
    known = requirements()
    for kind, req in {**POP_REQUIREMENTS, **PERMIT_REQUIREMENTS}.items():
        assert req in known, f"{kind} names {req}, which the spec does not have"


def test_a_pop_finding_says_its_requirement_and_message() -> None:
    rows = [
        _row(0, 0, "broker:b", "SEND", topic="T", broker="b", queue_id=0, offset=0, msg_id="m1", tags="A"),
        _row(1, 10, "broker:b", "POP", group="G", client_id="c1", topic="T", broker="b", queue_id=0, offset=0,
             msg_id="m1", handle="h1", invisible_ms=60_000, reconsume_times=0),
        _row(2, 20, "broker:b", "POP", group="G", client_id="c2", topic="T", broker="b", queue_id=0, offset=0,
             msg_id="m1", handle="h2", invisible_ms=60_000, reconsume_times=0),
    ]
    findings = audit_pop(rows, "G", settle_ms=0)
    early = [f for f in findings if f.kind == "early-redelivery"]
    assert early and isinstance(early[0], Finding) and early[0].requirement == "PACK-1"
    assert str(early[0]).startswith("[PACK-1] early-redelivery m1: POP at t=20"), str(early[0])


def test_one_timeline_shows_pop_and_permit_rows_filtered_by_messages_and_clients() -> None:
    rows = [
        _row(0, 1_000, "broker:b", "POP", group="G", client_id="c1", topic="T", queue_id=0, offset=4, msg_id="m1",
             handle="h1", invisible_ms=30_000, reconsume_times=0),
        _row(1, 1_500, "broker:b", "ACK", group="G", client_id="c1", handle="h1", status="OK", msg_id="m1"),
        _row(2, 1_600, "broker:b", "POP", group="G", client_id="c2", topic="T", queue_id=0, offset=5, msg_id="m2",
             handle="h2", invisible_ms=30_000, reconsume_times=0),
        _row(3, 2_000, "broker:b", "FLOW", group="S", client_id="c1", topic="P", count=10,
             detail=json.dumps({"permits_before": 0})),
        _row(4, 2_100, "broker:b", "DISPATCH", group="S", client_id="c2", topic="P", msg_id="p1", offset=0),
        _row(5, 2_200, "broker:b", "CRASH"),
    ]
    pop = format_timeline(rows, msg_id={"m1"}, events=POP_EVENTS)
    assert "handle=[h1]" in pop and "invisible_ms=30000" in pop and "m2" not in pop and "CRASH" in pop
    assert pop.splitlines()[0].lstrip().startswith("0.000s"), "time counts from the first row"
    flow = format_timeline(rows, client={"c1"}, events=PERMIT_EVENTS)
    assert "+10 permits" in flow and "p1" not in flow and "CRASH" in flow
    assert "DISPATCH" in format_timeline(rows, client="c2", events=PERMIT_EVENTS)
