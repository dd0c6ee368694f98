"""Permits (Pulsar's CommandFlow, seed 003): *overrun* and *freeze*.

A consumer grants permits with FLOW (``count``, cumulative: each FLOW adds to what is left) and the
broker may send at most that many messages (DISPATCH, one row per message).

* *overrun*: per (group, client, topic) in time order, the DISPATCH at which the running number of
  dispatches first exceeds the running sum of FLOW permits. One finding per episode: the next one
  starts only after the permits caught up again.
* *freeze*: per (group, topic), an interval in which the subscription's consumers hold permits, its
  backlog is positive (SENDs to the topic since the group's first FLOW, minus first dispatches of each
  message) and nothing is dispatched to any of them, lasting longer than the freeze window (default
  10 s). Permits are counted over the whole subscription so that the idle standby of an exclusive or
  failover subscription, which holds permits but is never dispatched to, does not count as frozen.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from conformance.audit.frames import RUN, TraceFrames
from conformance.audit.schema import findings, ms, witness

_COLS = (RUN, "group", "client_id", "topic", "event", "ts", "seq", "source", "count", "msg_id", "offset")


def _overruns(frames: TraceFrames, rows: DataFrame) -> DataFrame:
    """``rows``: the FLOW and DISPATCH rows."""
    p = frames.params
    order = Window.partitionBy(RUN, "group", "client_id", "topic").orderBy("ts", "seq")
    upto = order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    delta = F.when(F.col("event") == "FLOW", F.col("count").cast("long")).otherwise(F.lit(-1))
    rows = rows.withColumn("balance", F.sum(delta).over(upto))
    rows = rows.withColumn("was", F.lag("balance", 1, 0).over(order))
    last_flow = F.struct("event", "source", "seq", "ts", "count")
    rows = rows.withColumn("flow", F.last(F.when(F.col("event") == "FLOW", last_flow), True).over(upto))
    rows = rows.filter((F.col("event") == "DISPATCH") & (F.col("balance") < 0) & (F.col("was") >= 0))
    flow_w = F.to_json(F.struct(F.col("flow.event").alias("event"), F.col("flow.source").alias("source"),
                                F.col("flow.seq").alias("seq"), F.col("flow.ts").alias("ts"), "group", "client_id",
                                "topic", F.col("flow.count").alias("count")))
    return findings(
        rows, "permit-overrun", "FLOW-2", p.max_witnesses,
        detail=F.to_json(F.struct(F.col("balance").alias("permits_after_dispatch"))),
        witnesses=F.array(flow_w, witness("group", "client_id", "topic", "msg_id", "offset")),
    )


def _freezes(frames: TraceFrames, flow: DataFrame, dispatch: DataFrame) -> DataFrame:
    p = frames.params
    subscribed = flow.groupBy(RUN, "group", "topic").agg(F.min("ts").alias("since"))
    # One copy of each SEND per permit subscription of its topic (a broadcast join with the few
    # subscriptions: the SENDs of topics no permit consumer reads go no further).
    sends = frames.sends().drop("group").join(F.broadcast(subscribed), [RUN, "topic"])
    sends = sends.filter(F.col("ts") >= F.col("since"))
    sends = sends.select(*[F.lit(None).cast("string").alias(c) if c == "client_id" else F.col(c) for c in _COLS])
    first = Window.partitionBy(RUN, "group", "topic", "msg_id").orderBy("ts", "seq")
    dispatch = dispatch.withColumn("first", F.row_number().over(first) == 1)
    rows = sends.withColumn("first", F.lit(False)).unionByName(flow.withColumn("first", F.lit(False)))
    rows = rows.unionByName(dispatch)
    is_dispatch = F.col("event") == "DISPATCH"
    permits = F.when(F.col("event") == "FLOW", F.col("count").cast("long")).when(is_dispatch, -1).otherwise(0)
    backlog = F.when(F.col("event") == "SEND", 1).when(is_dispatch & F.col("first"), -1).otherwise(0)
    rank = F.when(F.col("event") == "SEND", 0).when(F.col("event") == "FLOW", 1).otherwise(2)
    order = Window.partitionBy(RUN, "group", "topic").orderBy("ts", rank, "seq")
    upto = order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    rows = rows.withColumn("permits", F.sum(permits).over(upto)).withColumn("backlog", F.sum(backlog).over(upto))
    eligible = (F.col("permits") > 0) & (F.col("backlog") > 0)
    rows = rows.withColumn("eligible", eligible).withColumn("was", F.lag(eligible, 1, False).over(order))
    stop = F.struct("ts", "event", "source", "seq")
    # The next stop after each row, scanning backwards (a growing frame, see ownership.intervals).
    after = Window.partitionBy(RUN, "group", "topic").orderBy(F.col("ts").desc(), rank.desc(), F.col("seq").desc())
    after = after.rowsBetween(Window.unboundedPreceding, -1)
    rows = rows.withColumn("stop", F.last(F.when(is_dispatch | ~F.col("eligible"), stop), True).over(after))
    starts = frames.with_horizon(rows.filter(F.col("eligible") & (is_dispatch | ~F.col("was"))))
    until = F.coalesce(F.col("stop.ts"), F.col("horizon"))
    starts = starts.withColumn("frozen_us", until - F.col("ts")).filter(F.col("frozen_us") > ms(p.freeze_window_ms))
    stop_w = F.when(F.col("stop").isNotNull(), F.to_json(F.struct(
        F.col("stop.event").alias("event"), F.col("stop.source").alias("source"), F.col("stop.seq").alias("seq"),
        F.col("stop.ts").alias("ts"), "group", "topic")))
    return findings(
        starts, "permit-freeze", "FLOW-3", p.max_witnesses,
        client_id=F.lit(None), value_ms=F.col("frozen_us") / 1000.0,
        detail=F.to_json(F.struct(F.col("permits"), F.col("backlog"),
                                  (F.col("frozen_us") / 1000.0).alias("frozen_ms"))),
        witnesses=F.array(witness("group", "client_id", "topic", "msg_id", "offset", "count"), stop_w),
    )


def find(frames: TraceFrames) -> DataFrame:
    rows = frames.events("FLOW", "DISPATCH").select(*_COLS)
    flow, dispatch = rows.filter(F.col("event") == "FLOW"), rows.filter(F.col("event") == "DISPATCH")
    return _overruns(frames, rows).unionByName(_freezes(frames, flow, dispatch))
