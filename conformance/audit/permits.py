"""Permits (Pulsar's CommandFlow, seed 003): *overrun* (FLOW-2 and FLOW-11) and *freeze* (FLOW-3).

A consumer grants permits with FLOW (``count``, cumulative: each FLOW adds to what is left) and the broker
charges one permit per message it sends (DISPATCH, one row per message). Pulsar never splits a batch entry, so
the balance (FLOWs minus dispatched messages, per (run, group, client, topic) in (ts, seq) order) may go
negative within a read and is never a finding by itself (FLOW-2 as corrected to the seed).

**Entries.** A DISPATCH row *starts an entry* unless it continues the entry of the consumer's previous
DISPATCH: same ``offset`` and a ``detail.batch_index`` above the previous row's. A message of an entry already
started (batch_index > 0 after its entry's earlier messages) is therefore never a finding. A row without
``batch_index`` (a recorder that cannot see batches) is an entry of its own.

* *permit-entry-overrun* (FLOW-11, SHOULD, profile strict): an entry started at a balance of 0 or below. The
  reference never does this; the Java broker may (it reads several entries per read), so it never fails the
  exit status.
* *permit-overrun* (FLOW-2, MUST): an entry started at 0 or below that no read could have carried. Why this is
  sound without seeing the broker's reads: the broker dispatches to a consumer in rounds (a read, or one
  consumer's share of a shared read), each begun while the consumer holds ``a > 0`` permits and carrying at most
  ``a`` entries (seed 003: a read at P permits reads at most min(P, readBatchSize) entries; the shared dispatcher
  gives a consumer at most its permits in entries, and every entry costs at least one permit, so several turns
  of one read add up to no more). A round's first message starts an entry, and the trace's balance there is at
  least the broker's ``a``: the balance the broker recorded itself is exact, and a recorder on the wire sees a
  FLOW before the broker does and a MESSAGE after it was sent. So if entry ``E`` is the ``c(E)``-th entry the
  consumer was sent, some earlier entry start ``s`` with balance ``was(s) > 0`` before it must satisfy
  ``c(E) - c(s) + 1 <= was(s)``; the running maximum of ``was(s) + c(s) - 1`` over such starts (*reach*) is what
  the trace allows, and an entry past it is a proven breach, reported as FLOW-2 instead of FLOW-11. With
  single-message entries reach is the permits granted so far, and the check is "more messages than permits".
  One finding per offending entry start.

  The key is one consumer's life: the broker starts a consumer created again at 0 permits, so its balance starts
  again after its UNSUBSCRIBE (with its topic), its client's CRASH, or a CRASH or RESTART of its broker
  (:func:`_lives`). A consumer re-created with none of these rows in the trace would carry the old balance over:
  a recorder should then name it with a new ``client_id`` (``mqtck record --protocol pulsar`` does).
* *freeze*: per (group, topic), an interval in which the subscription's consumers hold permits, its
  backlog is positive (SENDs to the topic since the group's first FLOW, minus first dispatches of each
  message) and nothing is dispatched to any of them, lasting longer than the freeze window (default
  10 s). Permits are counted over the whole subscription so that the idle standby of an exclusive or
  failover subscription, which holds permits but is never dispatched to, does not count as frozen. A consumer's
  UNSUBSCRIBE (with its topic) takes what it still held out of the sum: a closed consumer holds no permits.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from conformance.audit.frames import RUN, TraceFrames
from conformance.audit.schema import findings, ms, witness

_COLS = (RUN, "group", "client_id", "topic", "event", "ts", "seq", "source", "count", "msg_id", "offset")
#: The overrun check also reads the batch position of each DISPATCH.
_OVERRUN_COLS = (*_COLS, "detail", "broker")


def _lives(frames: TraceFrames, rows: DataFrame, departures: DataFrame) -> DataFrame:
    """``rows`` (FLOW and DISPATCH) with ``life``: how many times their consumer was gone before them. A consumer is
    gone at its UNSUBSCRIBE (with its topic), at its client's CRASH, and at a CRASH or RESTART of the broker its rows
    name; a consumer created again under the same name starts at 0 permits, so its balance starts again there. A
    row at the same ``ts`` as such an event counts as before it (nothing is sent to a consumer after it is gone)."""
    key = (RUN, "group", "client_id", "topic")
    keys = rows.select(*key, "broker").distinct()
    gone = frames.events("CRASH", "RESTART")
    brokers = gone.filter(F.col("source").startswith("broker:")) \
        .select(RUN, F.expr("substring(source, 8)").alias("broker"), "ts", "seq").join(keys, [RUN, "broker"])
    clients = gone.filter((F.col("event") == "CRASH") & F.col("source").startswith("client:")) \
        .select(RUN, F.expr("substring(source, 8)").alias("client_id"), "ts", "seq") \
        .join(keys.drop("broker").distinct(), [RUN, "client_id"])
    ends = brokers.select(*key, "ts", "seq").unionByName(clients.select(*key, "ts", "seq")) \
        .unionByName(departures.select(*key, "ts", "seq")).withColumn("event", F.lit("GONE"))
    rows = rows.unionByName(ends, allowMissingColumns=True)
    is_end = (F.col("event") == "GONE").cast("int")
    order = Window.partitionBy(*key).orderBy("ts", is_end, "seq").rowsBetween(Window.unboundedPreceding,
                                                                             Window.currentRow)
    return rows.withColumn("life", F.sum(is_end).over(order)).filter(F.col("event") != "GONE")


def _overruns(frames: TraceFrames, rows: DataFrame) -> DataFrame:
    """``rows``: the FLOW and DISPATCH rows (with ``detail`` and ``life``). FLOW-2 and FLOW-11 findings, one per
    entry start."""
    p = frames.params
    key = (RUN, "group", "client_id", "topic", "life")
    is_dispatch = F.col("event") == "DISPATCH"
    index = F.get_json_object("detail", "$.batch_index").cast("long")
    dispatch = rows.filter(is_dispatch).withColumn("batch_index", index)
    previous = Window.partitionBy(*key).orderBy("ts", "seq")
    continues = (F.col("batch_index") > 0) & (F.lag("offset").over(previous) == F.col("offset")) \
        & (F.lag("batch_index").over(previous) < F.col("batch_index"))
    dispatch = dispatch.withColumn("starts", ~F.coalesce(continues, F.lit(False)))
    rows = rows.filter(~is_dispatch).withColumn("batch_index", F.lit(None).cast("long")) \
        .withColumn("starts", F.lit(False)).unionByName(dispatch)
    order = Window.partitionBy(*key).orderBy("ts", "seq")
    upto = order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    delta = F.when(F.col("event") == "FLOW", F.col("count").cast("long")).otherwise(F.lit(-1))
    rows = rows.withColumn("balance", F.sum(delta).over(upto)).withColumn("was", F.col("balance") - delta)
    rows = rows.withColumn("entry", F.sum(F.col("starts").cast("long")).over(upto))
    reach = F.when(F.col("starts") & (F.col("was") > 0), F.col("was") + F.col("entry") - 1)
    rows = rows.withColumn("reach", F.max(reach).over(upto))
    last_flow = F.struct("event", "source", "seq", "ts", "count")
    rows = rows.withColumn("flow", F.last(F.when(F.col("event") == "FLOW", last_flow), True).over(upto))
    rows = rows.filter(F.col("starts") & (F.col("was") <= 0))
    breach = F.col("reach").isNull() | (F.col("entry") > F.col("reach"))
    flow_w = F.to_json(F.struct(F.col("flow.event").alias("event"), F.col("flow.source").alias("source"),
                                F.col("flow.seq").alias("seq"), F.col("flow.ts").alias("ts"), "group", "client_id",
                                "topic", F.col("flow.count").alias("count")))
    return findings(
        rows, F.when(breach, "permit-overrun").otherwise("permit-entry-overrun"),
        F.when(breach, "FLOW-2").otherwise("FLOW-11"), p.max_witnesses,
        detail=F.to_json(F.struct(F.col("was").alias("permits_before_entry"),
                                  F.col("balance").alias("permits_after_dispatch"),
                                  F.col("entry").alias("entries_sent"),
                                  F.col("reach").alias("entries_reads_allow"))),
        witnesses=F.array(flow_w, witness("group", "client_id", "topic", "msg_id", "offset", "detail")),
    )


def _departures(rows: DataFrame) -> DataFrame:
    """``rows``: FLOW, DISPATCH and UNSUBSCRIBE rows. The UNSUBSCRIBE rows of permit consumers, each with ``count``
    = minus the consumer's balance when it left: a consumer that is gone holds no permits, and its leftover ones
    must not make its subscription look frozen."""
    client = Window.partitionBy(RUN, "group", "client_id", "topic").orderBy("ts", "seq")
    upto = client.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    delta = F.when(F.col("event") == "FLOW", F.col("count").cast("long")) \
        .when(F.col("event") == "DISPATCH", F.lit(-1)).otherwise(F.lit(0))
    rows = rows.withColumn("count", (-F.sum(delta).over(upto)).cast("int"))
    return rows.filter((F.col("event") == "UNSUBSCRIBE") & (F.col("count") != 0))


def _freezes(frames: TraceFrames, flow: DataFrame, dispatch: DataFrame, departures: DataFrame) -> DataFrame:
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
    rows = rows.unionByName(dispatch).unionByName(departures.withColumn("first", F.lit(False)))
    is_dispatch = F.col("event") == "DISPATCH"
    permits = F.when(F.col("event").isin("FLOW", "UNSUBSCRIBE"), F.col("count").cast("long")) \
        .when(is_dispatch, -1).otherwise(0)
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
    scanned = frames.events("FLOW", "DISPATCH", "UNSUBSCRIBE")
    wide = scanned.filter(F.col("event") != "UNSUBSCRIBE").select(*_OVERRUN_COLS)
    rows = wide.select(*_COLS)
    flow, dispatch = rows.filter(F.col("event") == "FLOW"), rows.filter(F.col("event") == "DISPATCH")
    departures = _departures(scanned.select(*_COLS))
    left = scanned.filter((F.col("event") == "UNSUBSCRIBE") & F.col("topic").isNotNull()).select(*_COLS)
    return _overruns(frames, _lives(frames, wide, left)).unionByName(
        _freezes(frames, flow, dispatch, departures))
