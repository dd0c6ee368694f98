"""``mqtck bench audit --baseline duckdb``: the same checks on the same Parquet, by Spark SQL and by DuckDB.

A benchmark baseline only (the audit stays on Spark): it tells how far Spark's time is from what a single-process
columnar engine needs for the same work on the same machine. To compare engines and not implementations, both
run the *same SQL text* over the same files, each with the machine's cores; the only differences are the quoting
of three columns named by keywords and how the trace is read (:func:`spark_times`, :func:`duckdb_times`). Every
check's result must be the same in both engines (``agree``), so a faster answer is never a different one.

The checks are the core of five of the audit's derivations, written as one query each:

* ``lost``: the anti-join of every SEND with the CLUSTERING groups subscribed to its topic against the OK
  consumptions (the audit also applies start offsets, retention and the settle time, which need the lanes);
* ``duplicates``: messages consumed OK more than once by a group;
* ``found-advances``: FOUND answers at a legal offset whose next offset does not advance past what they return
  (the read half of the offset correction check, ``conformance.audit.offsets``);
* ``ownership-overlap``: pairs of owners of one queue whose ASSIGN..REVOKE spans intersect;
* ``permit-overrun``: entries (DISPATCH rows not continuing the previous one's batch) started at a balance of 0
  or below past what any read could carry, FLOW-2 as ``conformance.audit.permits`` derives it (a batch's overshoot
  is legal; the audit also starts a consumer's balance again when it is gone, which needs other events' rows).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

#: Engines ``--baseline`` accepts.
ENGINES = ("duckdb",)

_SUBSCRIBED = """(SELECT DISTINCT run, {group} AS grp, topic FROM trace
                  WHERE event = 'SUBSCRIBE' AND (model = 'CLUSTERING' OR model IS NULL))"""

#: Columns whose names are keywords in one engine or the other, quoted by each engine's rule.
KEYWORD_COLUMNS = ("group", "offset", "count")
#: Check name -> portable SQL over the view ``trace``; ``{group}``, ``{offset}`` and ``{count}`` are the engine's
#: quoting of those columns.
CHECKS: dict[str, str] = {
    "lost": f"""
        SELECT COUNT(*) FROM trace s JOIN {_SUBSCRIBED} g ON s.run = g.run AND s.topic = g.topic
        WHERE s.event = 'SEND' AND NOT EXISTS (
            SELECT 1 FROM trace c WHERE c.event = 'CONSUME' AND c.status = 'OK' AND c.run = s.run
                AND c.{{group}} = g.grp AND c.msg_id = s.msg_id)""",
    "duplicates": """
        SELECT COUNT(*) FROM (
            SELECT run, {group}, msg_id FROM trace WHERE event = 'CONSUME' AND status = 'OK'
            GROUP BY run, {group}, msg_id HAVING COUNT(*) > 1) d""",
    "found-advances": """
        SELECT COUNT(*) FROM trace
        WHERE event = 'PULL_RESP' AND status = 'FOUND' AND {offset} >= min_offset AND {offset} < max_offset
            AND NOT (next_offset > {offset} AND next_offset <= GREATEST(max_offset, {offset} + {count})
                     AND {count} > 0 AND next_offset - {offset} >= {count})""",
    "ownership-overlap": """
        WITH steps AS (
            SELECT run, {group} AS grp, client_id, topic, broker, queue_id, event, ts,
                   LEAD(ts) OVER (PARTITION BY run, {group}, client_id, topic, broker, queue_id
                                  ORDER BY ts, seq) AS next_ts
            FROM trace WHERE event IN ('ASSIGN', 'REVOKE')),
        spans AS (
            SELECT run, grp, client_id, topic, broker, queue_id, ts AS start_ts,
                   COALESCE(next_ts, 9223372036854775807) AS end_ts
            FROM steps WHERE event = 'ASSIGN')
        SELECT COUNT(*) FROM spans a JOIN spans b
            ON a.run = b.run AND a.grp = b.grp AND a.topic = b.topic AND a.broker = b.broker
               AND a.queue_id = b.queue_id AND a.client_id < b.client_id
        WHERE a.start_ts < b.end_ts AND b.start_ts < a.end_ts""",
    "permit-overrun": """
        WITH disp AS (
            SELECT run, {group} AS grp, client_id, topic, ts, seq, {offset} AS off,
                   CAST(NULLIF(regexp_extract(COALESCE(detail, ''), '"batch_index": *([0-9]+)', 1), '') AS BIGINT)
                       AS bi
            FROM trace WHERE event = 'DISPATCH'),
        steps AS (
            SELECT run, grp, client_id, topic, ts, seq, CAST(-1 AS BIGINT) AS delta,
                   CASE WHEN bi > 0 AND LAG(off) OVER (PARTITION BY run, grp, client_id, topic ORDER BY ts, seq) = off
                             AND LAG(bi) OVER (PARTITION BY run, grp, client_id, topic ORDER BY ts, seq) < bi
                        THEN 0 ELSE 1 END AS starts
            FROM disp
            UNION ALL
            SELECT run, {group}, client_id, topic, ts, seq, CAST({count} AS BIGINT), 0 FROM trace WHERE event = 'FLOW'),
        balances AS (
            SELECT run, grp, client_id, topic, ts, seq, starts,
                   SUM(delta) OVER (PARTITION BY run, grp, client_id, topic ORDER BY ts, seq
                                    ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) - delta AS was,
                   SUM(starts) OVER (PARTITION BY run, grp, client_id, topic ORDER BY ts, seq
                                     ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS entry
            FROM steps),
        reaches AS (
            SELECT starts, was, entry,
                   MAX(CASE WHEN starts = 1 AND was > 0 THEN was + entry - 1 END)
                       OVER (PARTITION BY run, grp, client_id, topic ORDER BY ts, seq
                             ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS reach
            FROM balances)
        SELECT COUNT(*) FROM reaches WHERE starts = 1 AND was <= 0 AND (reach IS NULL OR entry > reach)""",
}


def _timed(run_one: Any) -> dict[str, dict[str, Any]]:
    out = {}
    for name, sql in CHECKS.items():
        started = time.perf_counter()
        rows = run_one(sql)
        out[name] = {"seconds": round(time.perf_counter() - started, 3), "rows": int(rows)}
    return out


def spark_times(spark: Any, trace: Path) -> dict[str, dict[str, Any]]:
    """Each check on Spark SQL (the session given: the audit's, already warm) over the trace's Parquet files."""
    spark.read.option("pathGlobFilter", "*.parquet").parquet(str(trace)).createOrReplaceTempView("trace")
    return _timed(lambda sql: spark.sql(sql.format(**{c: f"`{c}`" for c in KEYWORD_COLUMNS})).collect()[0][0])


def duckdb_times(trace: Path, threads: int | None = None) -> dict[str, dict[str, Any]]:
    """Each check on DuckDB, with as many threads as Spark has cores, over the same files (hive partitions as
    Spark reads them)."""
    import duckdb

    con = duckdb.connect(config={"threads": threads or os.cpu_count() or 1})
    try:
        glob = str(trace / "**" / "*.parquet")
        con.execute(f"CREATE VIEW trace AS SELECT * FROM read_parquet('{glob}', hive_partitioning = true)")
        return _timed(lambda sql: con.execute(sql.format(**{c: f'"{c}"' for c in KEYWORD_COLUMNS})).fetchone()[0])
    finally:
        con.close()


def compare(spark: Any, trace: Path, engine: str) -> dict[str, Any]:
    """Both engines on every check: times, their ratio, and whether the answers agree."""
    if engine not in ENGINES:
        raise ValueError(f"--baseline: unknown engine {engine!r}; known: {', '.join(ENGINES)}")
    on_spark = spark_times(spark, trace)
    on_other = duckdb_times(trace)
    checks = {name: {"spark_s": on_spark[name]["seconds"], f"{engine}_s": on_other[name]["seconds"],
                     "ratio": round(on_spark[name]["seconds"] / max(on_other[name]["seconds"], 1e-3), 1),
                     "rows": on_spark[name]["rows"], "agree": on_spark[name]["rows"] == on_other[name]["rows"]}
              for name in CHECKS}
    spark_total = sum(c["spark_s"] for c in checks.values())
    other_total = sum(c[f"{engine}_s"] for c in checks.values())
    return {"engine": engine, "checks": checks, "spark_s": round(spark_total, 3), f"{engine}_s": round(other_total, 3),
            "ratio": round(spark_total / max(other_total, 1e-3), 1),
            "agree": all(c["agree"] for c in checks.values())}
