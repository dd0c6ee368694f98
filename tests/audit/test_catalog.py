"""The catalog (``conformance.audit.frames.build_catalog``): what the driver knows of a trace before the
derivations, here which recorder each client's events are read from (the views of ``TraceFrames``)."""

from __future__ import annotations

import json


def _pull(source: str, client: str, seq: int) -> dict:
    return {"schema_version": 1, "run": "r", "ts": 1000 + seq, "source": source, "seq": seq, "event": "PULL_REQ",
            "group": "G", "client_id": client, "topic": "T", "broker": "b", "queue_id": 0, "offset": 0,
            "max_nums": 32, "suspend_ms": 15000}


def test_the_views_know_which_clients_recorded_their_own_rows_and_which_a_broker_recorded(spark, tmp_path) -> None:
    """c1's pulls were recorded by c1 and by the broker, c2's by the broker alone, c3's by another client (not its
    own rows): the client view prefers c1's own rows, the broker view the broker's rows of c1 and c2."""
    from conformance.audit.frames import build_catalog
    from conformance.audit.load import load_trace

    rows = [_pull("client:c1", "c1", 1), _pull("broker:b", "c1", 1), _pull("broker:b", "c2", 2),
            _pull("client:c9", "c3", 1)]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    loaded = load_trace(spark, path, tmp_path)
    try:
        catalog = build_catalog(loaded.rows)
    finally:
        loaded.cleanup()
    assert catalog.preferred[("PULL_REQ", "client")] == ["r\0c1"]
    assert sorted(catalog.preferred[("PULL_REQ", "broker")]) == ["r\0c1", "r\0c2"]
    assert catalog.groups_with["PULL_REQ"] == ["r\0G"]
