"""Trace recorder: rows validate against the published schema; JSONL and Parquet agree."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import jsonschema
import pyarrow.parquet as pq
import pytest

from reference import trace
from reference.clock import SimClock
from reference.rules import trace_schema

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_published_schemas_are_rendered_from_the_code() -> None:
    assert json.loads((FIXTURES / "trace-schema-v1.json").read_text()) == trace_schema.json_schema()
    assert json.loads((FIXTURES / "trace-schema-v1.arrow.json").read_text()) == trace_schema.arrow_schema_json()


def _record_sample(t: trace.Trace, clock: SimClock) -> None:
    b = t.source("broker:b1")
    c = t.source("client:c1")
    b.record("SEND", topic="T", broker="b1", queue_id=0, offset=0, msg_id="m0", tags="A")
    clock.advance(5)
    c.record("PULL_REQ", group="G", client_id="c1", topic="T", broker="b1", queue_id=0, offset=0,
             max_nums=32, suspend_ms=15000)
    b.record("PULL_RESP", group="G", client_id="c1", topic="T", broker="b1", queue_id=0, offset=0,
             status="FOUND", next_offset=1, min_offset=0, max_offset=1, count=1, held_ms=0,
             detail={"code": "SUCCESS"})
    b.record("SEND", topic="T", broker="b1", queue_id=0, offset=1, msg_id="m1", tags="B")
    t.end()


@pytest.mark.req("TRACE-1")
@pytest.mark.parametrize("name", ["t.jsonl", "t.jsonl.gz", "parquet-dir"])
def test_recorded_rows_validate_and_round_trip(tmp_path: Path, name: str) -> None:
    clock = SimClock()
    mem = trace.MemorySink()
    _record_sample(trace.Trace(mem, "r1", clock), clock)
    clock2 = SimClock()
    path = tmp_path / name
    _record_sample(trace.Trace(trace.sink_for(path), "r1", clock2), clock2)
    if name.endswith(".gz"):
        with gzip.open(path, "rt") as fh:
            rows = [json.loads(x) for x in fh]
    elif name.endswith(".jsonl"):
        rows = [json.loads(x) for x in path.read_text().splitlines()]
    else:
        table = pq.read_table(path)
        assert table.schema.equals(trace_schema.ARROW_SCHEMA, check_metadata=False)
        rows = [{k: v for k, v in r.items() if v is not None} for r in table.to_pylist()]
    assert rows == [{k: v for k, v in r.items() if v is not None} for r in mem.rows]
    validator = jsonschema.Draft202012Validator(trace_schema.json_schema())
    for row in rows:
        validator.validate(row)
        assert trace_schema.missing_columns(row) == []
    for source in ("broker:b1", "client:c1"):
        seqs = [r["seq"] for r in rows if r["source"] == source]
        assert seqs == sorted(set(seqs)) and seqs, "seq strictly increasing per source"
    assert rows[1]["ts"] == rows[0]["ts"] + 5000, "ts is microseconds of the source's clock"
    assert {r["event"] for r in rows if r["source"] == "client:c1"} == {"PULL_REQ", "END"}


@pytest.mark.req("TRACE-1")
def test_schema_rejects_a_row_missing_a_required_column() -> None:
    validator = jsonschema.Draft202012Validator(trace_schema.json_schema())
    row = {"schema_version": 1, "run": "r", "ts": 1, "source": "s", "seq": 1, "event": "SEND", "topic": "T"}
    assert not validator.is_valid(row)
    assert set(trace_schema.missing_columns(row)) == {"broker", "queue_id", "offset", "msg_id", "tags"}
    assert not validator.is_valid({**row, "event": "NOPE"})
    with pytest.raises(KeyError):
        trace.Trace(trace.MemorySink(), "r", SimClock()).source("x").record("SEND", bogus=1)
