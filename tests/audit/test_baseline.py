"""``mqtck bench audit --baseline duckdb``: the same SQL on Spark and on DuckDB over the same Parquet must give the
same answers (a faster engine is only a baseline if it answers the same), and those answers must be right: two of
them are recomputed here a third way, with pyarrow."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("duckdb")

from conformance.bench.baseline import CHECKS, compare  # noqa: E402

INJECT = "duplicate-retry=2,duplicate-unknown=2,permit-overrun=2,permit-entry-overrun=2,ownership-overlap=2,lost=2"


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from conformance.audit.synth import parse_inject, synthesize

    out = tmp_path_factory.mktemp("baseline") / "trace"
    synthesize(out, 20_000, 3, parse_inject(INJECT))
    return out


def test_both_engines_answer_every_check_alike(spark, trace: Path) -> None:  # type: ignore[no-untyped-def]
    result = compare(spark, trace, "duckdb")
    assert set(result["checks"]) == set(CHECKS)
    assert result["agree"], result["checks"]
    assert result["spark_s"] > 0 and result["duckdb_s"] > 0 and result["ratio"] > 0
    checks = result["checks"]
    # Recomputed with pyarrow: messages consumed OK twice or more by a group, and dispatches past the permits.
    import pyarrow.parquet as pq

    rows = [r for part in sorted(trace.rglob("*.parquet")) for r in pq.read_table(part).to_pylist()]
    consumed = Counter((r["run"], r["group"], r["msg_id"]) for r in rows
                       if r["event"] == "CONSUME" and r["status"] == "OK")
    assert checks["duplicates"]["rows"] == sum(1 for n in consumed.values() if n > 1) > 0
    assert checks["permit-overrun"]["rows"] == _flow2_breaches(rows) > 0


def _flow2_breaches(rows: list[dict]) -> int:
    """FLOW-2 as the audit derives it (conformance.audit.permits): an entry started at a balance of 0 or below
    past the reach of every earlier start at a positive balance."""
    state: dict[tuple, dict] = {}
    breaches = 0
    for r in sorted((r for r in rows if r["event"] in ("FLOW", "DISPATCH")), key=lambda r: (r["ts"], r["seq"])):
        s = state.setdefault((r["run"], r["group"], r["client_id"], r["topic"]),
                             {"balance": 0, "entry": 0, "reach": None, "last": None})
        if r["event"] == "FLOW":
            s["balance"] += r["count"]
            continue
        index = json.loads(r["detail"]).get("batch_index") if r["detail"] else None
        last = s["last"]
        starts = not (index is not None and index > 0 and last is not None and last[0] == r["offset"]
                      and last[1] is not None and last[1] < index)
        s["last"] = (r["offset"], index)
        was = s["balance"]
        s["balance"] -= 1
        if not starts:
            continue
        s["entry"] += 1
        if was > 0:
            s["reach"] = max(s["reach"] or 0, was + s["entry"] - 1)
        elif s["reach"] is None or s["entry"] > s["reach"]:
            breaches += 1
    return breaches


def test_an_unknown_engine_is_refused(spark, trace: Path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="unknown engine 'sqlite'"):
        compare(spark, trace, "sqlite")
