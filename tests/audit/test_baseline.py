"""``mqtck bench audit --baseline duckdb``: the same SQL on Spark and on DuckDB over the same Parquet must give the
same answers (a faster engine is only a baseline if it answers the same), and those answers must be right: two of
them are recomputed here a third way, with pyarrow."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("duckdb")

from conformance.bench.baseline import CHECKS, compare  # noqa: E402

INJECT = "duplicate-retry=2,duplicate-unknown=2,permit-overrun=2,ownership-overlap=2,lost=2"


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
    balance: Counter[tuple[str, str, str, str]] = Counter()
    overruns = 0
    for r in sorted((r for r in rows if r["event"] in ("FLOW", "DISPATCH")), key=lambda r: (r["ts"], r["seq"])):
        key = (r["run"], r["group"], r["client_id"], r["topic"])
        balance[key] += r["count"] if r["event"] == "FLOW" else -1
        overruns += r["event"] == "DISPATCH" and balance[key] < 0
    assert checks["permit-overrun"]["rows"] == overruns > 0


def test_an_unknown_engine_is_refused(spark, trace: Path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="unknown engine 'sqlite'"):
        compare(spark, trace, "sqlite")
