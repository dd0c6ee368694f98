"""The few hundred numbers the report plots, aggregated by Spark in the same job as the findings.

Metric rows travel in the findings schema with a ``metric:`` category, so that one Spark action
computes findings and metrics from the same shuffles (a second action would recompute the queue pass);
the job separates them when it reads the result back (:func:`read_metrics`).

* unseen messages and consumer lag over time: per group and time bucket (:data:`BUCKETS` per run), the
  expected messages sent, those first consumed OK, and the summed SEND-to-consume delay;
* the wake-latency histogram (:data:`conformance.audit.long_poll.LATENCY_BUCKETS_MS`);
* ownership intervals (for the timeline of the queues with overlaps, and a few others).
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from conformance.audit import long_poll
from conformance.audit.frames import RUN, TraceFrames
from conformance.audit.queues import MSG, QueuePass
from conformance.audit.schema import FINDING_SCHEMA

BUCKETS = 60
PREFIX = "metric:"
#: Queues shown in a run's ownership timeline, and spans kept per queue.
TIMELINE_QUEUES = 8
TIMELINE_SPANS = 60
_QUEUE_KEYS = ("group", "topic", "broker", "queue_id")


def _rows(df: DataFrame, name: str | Column, **columns: Column) -> DataFrame:
    out = []
    for field in FINDING_SCHEMA.fields:
        if field.name == "category":
            expr = F.concat(F.lit(PREFIX), name if isinstance(name, Column) else F.lit(name))
        elif field.name in columns:
            expr = columns[field.name]
        elif field.name in ("run", "group") and field.name in df.columns:
            expr = F.col(field.name)
        else:
            expr = F.lit(None)
        out.append(expr.cast(field.dataType).alias(field.name))
    return df.select(*out)


def _width(first: int | None, horizon: int | None) -> int:
    return max(((horizon or 0) - (first or 0)) // BUCKETS + 1, 1)


def items(queue: QueuePass) -> Column:
    """What one queue-pass row contributes (array of name, bucket, value): an expected message to
    ``sent`` at its SEND's time bucket and to ``consumed`` at its first OK's (with its lag), a woken pull
    answer to ``wake`` at its latency bucket. The queue pass sums them up in its own scan."""
    kind, expected = F.col("kind"), F.coalesce(F.col("expected"), F.lit(False))
    latency = long_poll.latency_ms()
    item = "struct<name:string,b:bigint,v:double>"
    return F.filter(F.array(
        F.when((kind == MSG) & expected, F.struct(
            F.lit("sent").alias("name"), _lane_bucket(queue.frames, F.col("ts")).alias("b"),
            F.lit(0.0).alias("v"))).cast(item),
        F.when((kind == MSG) & expected & F.col("done_ts").isNotNull(), F.struct(
            F.lit("consumed").alias("name"), _lane_bucket(queue.frames, F.col("done_ts")).alias("b"),
            ((F.col("done_ts") - F.col("ts")) / 1000.0).alias("v"))).cast(item),
        F.when(latency.isNotNull(), F.struct(F.lit("wake").alias("name"), long_poll.latency_bucket(latency).alias("b"),
                                             latency.alias("v"))).cast(item),
    ), lambda x: x.isNotNull())


def _lane_bucket(frames: TraceFrames, ts: Column) -> Column:
    """The time bucket of ``ts`` in its run (first event to horizon in BUCKETS steps of :func:`_width`, the
    one the plots read the buckets back with); the queue pass gives each row its lane's ``run``."""
    first = frames.run_fact(lambda f: f.first_ts, 0)
    width = frames.run_fact(lambda f: _width(f.first_ts, f.horizon), 1)
    bucket = F.floor((ts - first) / width)
    return F.least(F.greatest(bucket, F.lit(0)), F.lit(BUCKETS - 1))


def metric_rows(queue: QueuePass, intervals: DataFrame) -> DataFrame:
    """The queue pass's metric sums and the ownership intervals as metric rows of the findings schema."""
    agg = queue.metrics.join(F.broadcast(queue.lanes.select("lane_key", RUN, "group")), "lane_key").groupBy(
        RUN, F.when(F.col("name") != "wake", F.col("group")).alias("group"), "name", "b").agg(
        F.sum("n").alias("n"), F.sum("total").alias("total"), F.max("top").alias("top"))
    series = _rows(agg, F.col("name"), ts=F.col("b"), offset=F.col("n"), value_ms=F.col("total"),
                   detail=F.to_json(F.struct(F.col("top").alias("max_ms"))))
    own = _rows(intervals, "own", ts=F.col("start"), value_ms=F.col("end").cast("double"),
                client_id=F.col("client_id"), topic=F.col("topic"), broker=F.col("broker"), queue_id=F.col("queue_id"))
    return series.unionByName(own)


def metric_queries(derived: DataFrame) -> dict[str, DataFrame]:
    """The small queries over the derived rows the plots need, for one job with the findings' own
    (:mod:`conformance.audit.batch`): the message and wake series, and the first queues of the ownership
    timeline (the queues with overlaps come from the findings)."""
    series = derived.filter(F.col("category").isin(*[PREFIX + n for n in ("sent", "consumed", "wake")]))
    queues = _own(derived).select(RUN, *_QUEUE_KEYS).distinct().orderBy(RUN, *_QUEUE_KEYS).limit(200)
    return {"series": series, "queues": queues}


def _own(derived: DataFrame) -> DataFrame:
    return derived.filter(F.col("category") == PREFIX + "own")


def read_metrics(frames: TraceFrames, derived: DataFrame, collected: dict[str, list[Any]],
                 overlap_queues: dict[str, list[tuple]]) -> dict[str, Any]:
    """The metrics from the collected rows of :func:`metric_queries` (and the spans of the timeline's
    queues, one more small job): message series, wake latency, ownership timeline."""
    series: dict[tuple[str, str], dict[int, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0, 0, 0.0]))
    wake: dict[str, dict[str, Any]] = {}
    bounds = (*long_poll.LATENCY_BUCKETS_MS, None)
    for r in collected["series"]:
        name = r["category"][len(PREFIX):]
        if name in ("sent", "consumed"):
            cell = series[(r[RUN], r["group"])][int(r["ts"])]
            if name == "sent":
                cell[0] += r["offset"]
            else:
                cell[1] += r["offset"]
                cell[2] += r["value_ms"] or 0.0
            continue
        entry = wake.setdefault(r[RUN], {"count": 0, "sum_ms": 0.0, "max_ms": 0.0,
                                         "buckets": [{"le_ms": b, "count": 0} for b in bounds]})
        entry["count"] += r["offset"]
        entry["sum_ms"] += r["value_ms"]
        entry["buckets"][int(r["ts"])]["count"] += r["offset"]
        entry["max_ms"] = max(entry["max_ms"], json.loads(r["detail"])["max_ms"])
    for entry in wake.values():
        entry["mean_ms"] = round(entry.pop("sum_ms") / entry["count"], 3) if entry["count"] else None
        entry["max_ms"] = round(entry["max_ms"], 3)
    messages: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(dict)
    for (run, group), cells in sorted(series.items()):
        facts = frames.catalog.runs.get(run)
        width = _width(facts.first_ts, facts.horizon) if facts else 1
        unseen, points = 0, []
        for b in range(BUCKETS):
            sent, consumed, lag_ms = cells.get(b, (0, 0, 0.0))
            unseen += sent - consumed
            points.append({"bucket": b, "t_s": round((b + 1) * width / 1e6, 3), "unseen": unseen,
                           "lag_ms": round(lag_ms / consumed, 3) if consumed else None})
        messages[run][group] = points
    return {"messages": dict(messages), "wake_latency": wake,
            "ownership": _timeline(_own(derived), collected["queues"], overlap_queues)}


def _timeline(own: DataFrame, first_queues: list[Any], overlap_queues: dict[str, list[tuple]]) -> dict[str, list[dict]]:
    keys = _QUEUE_KEYS
    wanted: dict[str, list[tuple]] = defaultdict(list)
    for run, queues in overlap_queues.items():
        wanted[run] = list(dict.fromkeys(queues))[:TIMELINE_QUEUES]
    for r in first_queues:
        q = tuple(r[k] for k in keys)
        if q not in wanted[r[RUN]] and len(wanted[r[RUN]]) < TIMELINE_QUEUES:
            wanted[r[RUN]].append(q)
    pairs = [(run, q) for run, qs in wanted.items() for q in qs]
    if not pairs:
        return {}
    cond = F.lit(False)
    for run, q in pairs:
        c = F.col(RUN) == run
        for k, v in zip(keys, q, strict=True):
            c = c & (F.col(k) == v)
        cond = cond | c
    spans: dict[tuple[str, tuple], list[dict]] = defaultdict(list)
    for r in own.filter(cond).orderBy("ts").collect():
        k = (r[RUN], tuple(r[x] for x in keys))
        if len(spans[k]) < TIMELINE_SPANS:
            spans[k].append({"client": r["client_id"], "start": r["ts"], "end": int(r["value_ms"])})
    out: dict[str, list[dict]] = defaultdict(list)
    for run, q in pairs:
        out[run].append({"queue": "/".join(str(x) for x in q), "spans": spans.get((run, q), [])})
    return dict(out)
