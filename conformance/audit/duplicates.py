"""Duplicates, attributed to their cause. Not violations: at-least-once allows them (seed 002 §3), but a
duplicate without a cause points at a bug, and the mix of causes says how a system behaves.

A duplicate is every OK consumption of a message after the first by the same consumer (the group in
clustering mode, the client in broadcasting mode; see :mod:`conformance.audit.consumption`). Its
cause, first that holds, in this order:

1. *rebalance*: a REVOKE of the message's queue in the group between the two OK consumptions (seed
   001 §5: a dropped queue's results are not committed, so the next owner consumes them again);
2. *crash*: a CRASH or RESTART of the first consumer or of a broker between them (uncommitted or
   unpersisted offsets are lost);
3. *retry*: a LATER or ERROR outcome of the message in the group before the second consumption
   (sent back to %RETRY%);
4. *pop-redelivery*: the message was POPped to the group more than once before the second
   consumption (its invisibility ended first, or an ack was lost);
5. *rebalance* again when the two consumptions were by different clients: the queue changed hands
   without a REVOKE in between (both owned it for a moment, a shutdown, an offset move);
6. *unknown*: the only duplicates ALO-3 forbids.

Duplicates are rare next to the trace: the consumption table (:func:`conformance.audit.consumption.consumed`,
one aggregation the queue pass needs anyway) counts each message's OK outcomes, the outcome rows of the
messages counted twice or more are picked by a broadcast semi-join (no shuffle of all the outcomes), one
window orders them, and each cause is a join of the (small) candidate set with its evidence.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from conformance.audit.consumption import RETRY_STATUSES
from conformance.audit.frames import RUN, TraceFrames
from conformance.audit.lineage import cut
from conformance.audit.schema import findings

KEY = (RUN, "group", "owner", "msg_id", "n")
CAUSES = ("rebalance", "crash", "retry", "pop-redelivery")


def _candidates(outcome_rows: DataFrame, consumed: DataFrame) -> DataFrame:
    twice = consumed.filter(F.col("ok_n") >= 2).select("msg_key")
    ok = outcome_rows.filter(F.col("status") == "OK").join(F.broadcast(twice), "msg_key", "left_semi")
    order = Window.partitionBy(RUN, "group", "owner", "msg_id").orderBy("ts", "seq")
    first = F.struct("ts", "seq", "source", "client_id", "event", "topic", "broker", "queue_id", "offset")
    rows = ok.withColumn("n", F.row_number().over(order)).withColumn("prev", F.lag(first).over(order))
    return rows.filter(F.col("n") >= 2)


def _hits(cands: DataFrame, evidence: DataFrame, condition, name: str) -> DataFrame:
    joined = F.broadcast(cands.alias("c")).join(evidence.alias("e"), condition(F.col), "inner")
    return joined.select(*[F.col(f"c.{k}").alias(k) for k in KEY]).distinct().withColumn(name, F.lit(True))


def find(frames: TraceFrames, outcome_rows: DataFrame, consumed: DataFrame) -> DataFrame:
    p = frames.params
    cands = cut(_candidates(outcome_rows, consumed))
    between = lambda col: (col("e.ts") > col("c.prev.ts")) & (col("e.ts") <= col("c.ts"))  # noqa: E731
    revoke = frames.view("REVOKE", "client").select(RUN, "group", "topic", "broker", "queue_id", "ts")
    crash = frames.events("CRASH", "RESTART").select(RUN, "source", "ts")
    later = frames.view("CONSUME", "client").filter(F.col("status").isin(*RETRY_STATUSES)).select(
        RUN, "group", "msg_id", "ts")
    pops = frames.event("POP").select(RUN, "group", "msg_id", "ts")
    same = lambda col, *ks: [col(f"e.{k}") == col(f"c.{k}") for k in ks]  # noqa: E731
    hits = [
        _hits(cands, revoke, lambda col: _all(same(col, RUN, "group") + [
            col("e.topic") == col("c.prev.topic"), col("e.broker") == col("c.prev.broker"),
            col("e.queue_id") == col("c.prev.queue_id"), between(col)]), "rebalance"),
        _hits(cands, crash, lambda col: _all(same(col, RUN) + [between(col),
            (col("e.source") == F.concat(F.lit("client:"), col("c.prev.client_id")))
            | F.startswith(col("e.source"), F.lit("broker:"))]), "crash"),
        _hits(cands, later, lambda col: _all(same(col, RUN, "group", "msg_id") + [col("e.ts") < col("c.ts")]),
              "retry"),
    ]
    pop_counts = F.broadcast(cands.alias("c")).join(pops.alias("e"), _all(same(F.col, RUN, "group", "msg_id") + [
        F.col("e.ts") <= F.col("c.ts")]), "inner").groupBy(*[F.col(f"c.{k}").alias(k) for k in KEY]).count()
    hits.append(pop_counts.filter(F.col("count") >= 2).drop("count").withColumn("pop-redelivery", F.lit(True)))
    out = cands
    for hit in hits:
        out = out.join(hit, list(KEY), "left")
    # Last resort before "unknown": another client consumed it, so the queue changed hands (a rebalance
    # window in which both owned it, a shutdown, an offset move).
    cause = F.when(F.col("client_id") != F.col("prev.client_id"), F.lit("rebalance")).otherwise(F.lit("unknown"))
    for name in reversed(CAUSES):
        cause = F.when(F.coalesce(F.col(f"`{name}`"), F.lit(False)), F.lit(name)).otherwise(cause)
    first = F.to_json(F.struct(
        F.col("prev.event").alias("event"), F.col("prev.source").alias("source"), F.col("prev.seq").alias("seq"),
        F.col("prev.ts").alias("ts"), "group", F.col("prev.client_id").alias("client_id"), "msg_id",
        F.lit("OK").alias("status"),
    ))
    again = F.to_json(F.struct("event", "source", "seq", "ts", "group", "client_id", "msg_id", "status", "topic",
                               "broker", "queue_id", "offset"))
    return findings(
        out, F.concat(F.lit("duplicate-"), cause), "ALO-3", p.max_witnesses,
        value_ms=(F.col("ts") - F.col("prev.ts")) / 1000.0,
        detail=F.to_json(F.struct(cause.alias("cause"), F.col("n").alias("consumption"))),
        witnesses=F.array(first, again),
    )


def _all(conditions):
    out = conditions[0]
    for c in conditions[1:]:
        out = out & c
    return out
