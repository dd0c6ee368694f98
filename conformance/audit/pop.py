"""POP: *early redelivery*, *redelivered after ack* and *never revived*.

Seed 004: a POPped message is invisible to the group for ``invisible_ms`` from the POP (a
CHANGE_INVISIBLE replaces that with its own ``invisible_ms`` from its ``ts``); an ACK by receipt handle
settles it; an unacked message becomes visible again when its invisibility ends and the revive
service puts it on the retry topic (REVIVE), to be POPped again with reconsume_times + 1.

Per (run, group, msg_id) the POP, ACK, CHANGE_INVISIBLE and REVIVE rows are scanned in time order.
Each POP opens a *delivery*; an ACK or CHANGE_INVISIBLE belongs to the delivery whose handle it names
(or, if the handle is unknown, to the latest delivery). Then:

* *early redelivery* (one finding per offending POP): a POP before the previous delivery's
  invisibility ended, when no ACK of the message came before it;
* *redelivered after ack* (one per offending POP): a POP after a successful ACK of the message;
* *never revived* (one per handle): a delivery never acked whose invisibility ended before the
  horizon minus the settle time, with no REVIVE and no later POP of the message after it.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from conformance.audit.frames import RUN, TraceFrames, key_of
from conformance.audit.schema import findings, ms

KEYS = (RUN, "group", "msg_id")
#: The windows' partition: a 64-bit hash of KEYS first, then KEYS themselves (exact whatever the hash).
#: Sorting compares an 8-byte prefix of the first key before anything else; with ``run`` first (the same
#: string on every row) every comparison of the five window sorts fell through to the strings.
PARTITION = ("message", *KEYS)
_COLS = (*KEYS, "event", "ts", "seq", "source", "client_id", "handle", "invisible_ms", "status", "topic",
         "broker", "queue_id", "offset", "reconsume_times")


def _rows(frames: TraceFrames) -> DataFrame:
    # Trace-sized for a POP workload: as many partitions as the queue pass (the windows below need no other).
    rows = frames.events("POP", "ACK", "CHANGE_INVISIBLE", "REVIVE").select(*_COLS, key_of(*KEYS).alias("message"))
    return rows.repartition(frames.wide_partitions, "message")


def _event(prefix: str, *columns: str):
    return F.to_json(F.struct(*[F.col(f"{prefix}.{c}").alias(c) for c in ("event", "source", "seq", "ts", *columns)]))


def find(frames: TraceFrames) -> DataFrame:
    p = frames.params
    rows = _rows(frames)
    is_pop = F.col("event") == "POP"
    order = Window.partitionBy(*PARTITION).orderBy("ts", "seq")
    upto = order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    before = order.rowsBetween(Window.unboundedPreceding, -1)
    rows = rows.withColumn("delivery", F.sum(is_pop.cast("int")).over(upto))
    by_handle = Window.partitionBy(*PARTITION, "handle")
    rows = rows.withColumn("handle_delivery", F.min(F.when(is_pop, F.col("delivery"))).over(by_handle))
    rows = rows.withColumn("owner", F.coalesce(F.col("handle_delivery"), F.col("delivery")))
    ack_ok = (F.col("event") == "ACK") & (F.col("status") == "OK")
    # The invisibility end a POP or CHANGE_INVISIBLE sets for its delivery.
    sets_end = is_pop | ((F.col("event") == "CHANGE_INVISIBLE") & (F.col("owner") == F.col("delivery")))
    end = F.struct((F.col("ts") + ms(F.col("invisible_ms"))).alias("end"), "event", "source", "seq", "ts",
                   "handle", "invisible_ms")
    rows = rows.withColumn("prev_end", F.last(F.when(sets_end, end), True).over(before))
    ack = F.struct("event", "source", "seq", "ts", "handle", "status", "client_id")
    rows = rows.withColumn("acked_before", F.last(F.when(ack_ok, ack), True).over(before))
    prev_pop = F.struct("event", "source", "seq", "ts", "handle", "client_id", "invisible_ms")
    rows = rows.withColumn("prev_pop", F.last(F.when(is_pop, prev_pop), True).over(before))
    # Per delivery: acked at all, and its final invisibility end.
    per_delivery = Window.partitionBy(*PARTITION, "owner")
    final_end = F.max_by(F.when(sets_end | is_pop, F.col("ts") + ms(F.col("invisible_ms"))),
                         F.when(sets_end | is_pop, F.struct("ts", "seq")))
    rows = rows.withColumn("acked", F.max(ack_ok.cast("int")).over(per_delivery))
    rows = rows.withColumn("final_end", final_end.over(per_delivery))
    after = Window.partitionBy(*PARTITION).orderBy(F.col("ts").desc(), F.col("seq").desc()).rowsBetween(
        Window.unboundedPreceding, -1)  # later rows, nearest last (see ownership.intervals)
    later = F.struct("event", "source", "seq", "ts")
    rows = rows.withColumn("followed", F.last(F.when(F.col("event").isin("POP", "REVIVE"), later), True).over(after))
    pops = frames.with_horizon(rows.filter(is_pop))
    after_ack = F.col("acked_before").isNotNull()
    early = ~after_ack & F.col("prev_end").isNotNull() & (F.col("ts") < F.col("prev_end.end"))
    never = (F.col("acked") == 0) & (F.col("final_end") < F.col("horizon") - ms(p.settle_ms)) \
        & F.col("followed").isNull()
    this_pop = F.to_json(F.struct("event", "source", "seq", "ts", "group", "client_id", "topic", "broker", "queue_id",
                                  "offset", "msg_id", "handle", "invisible_ms", "reconsume_times"))
    redeliveries = pops.filter(after_ack | early)
    redeliveries = findings(
        redeliveries,
        F.when(after_ack, "redelivered-after-ack").otherwise("early-redelivery"),
        F.when(after_ack, "PACK-3").otherwise("PACK-1"),
        p.max_witnesses,
        value_ms=F.when(~after_ack, (F.col("prev_end.end") - F.col("ts")) / 1000.0),
        detail=F.to_json(F.struct(F.col("prev_end.end").alias("previous_invisible_until"),
                                  F.col("acked_before.ts").alias("acked_at"))),
        witnesses=F.array(
            F.when(after_ack, _event("acked_before", "handle", "status", "client_id")),
            _event("prev_pop", "handle", "client_id", "invisible_ms"),
            F.when(~after_ack & (F.col("prev_end.event") == "CHANGE_INVISIBLE"),
                   _event("prev_end", "handle", "invisible_ms")),
            this_pop,
        ),
    )
    unrevived = findings(
        pops.filter(never), "never-revived", "REVIVE-2", p.max_witnesses,
        value_ms=(F.col("horizon") - F.col("final_end")) / 1000.0,
        detail=F.to_json(F.struct(F.col("final_end").alias("invisible_until"), F.col("handle"))),
        witnesses=F.array(this_pop),
    )
    return redeliveries.unionByName(unrevived)
