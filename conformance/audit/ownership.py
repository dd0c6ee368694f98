"""*ownership overlap*: two clients of a pulling clustering group owning one queue at once for longer
than the allowed window.

Seed 001 §3: in clustering mode a queue belongs to one consumer of the group. During a rebalance the
new owner may start before the old one has dropped the queue (each client rebalances on its own
20 s timer), so a short overlap is normal; a longer one means two consumers pull the same messages.
A client owns a queue from its ASSIGN until its REVOKE of it, its CRASH, its END, or the horizon.
POP groups share queues by design and are exempt (the rule covers groups that record PULL_REQ rows),
as are broadcasting groups. One finding per overlapping pair, with the overlap's duration.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from conformance.audit.frames import RUN, TraceFrames
from conformance.audit.schema import findings

QUEUE_KEYS = (RUN, "group", "topic", "broker", "queue_id")
KEYS = (*QUEUE_KEYS, "client_id")


def intervals(frames: TraceFrames) -> DataFrame:
    """(run, group, queue, client_id, start, end, assign witness, end witness) for pulling clustering groups."""
    cols = (*KEYS, "event", "ts", "seq", "source", "epoch")
    changes = frames.views("client", "ASSIGN", "REVOKE").select(*cols)
    changes = changes.filter(frames.group_has("PULL_REQ") & ~frames.broadcasting())
    clients = changes.select(*KEYS).distinct().withColumn("source", F.concat(F.lit("client:"), F.col("client_id")))
    stops = frames.events("CRASH", "END").select(RUN, "source", "event", "ts", "seq")
    stops = stops.join(clients, [RUN, "source"]).withColumn("epoch", F.lit(None).cast("long"))
    rows = changes.unionByName(stops.select(*cols))
    order = Window.partitionBy(*KEYS).orderBy("ts", "seq")
    owning = F.col("event") == "ASSIGN"
    rows = rows.withColumn("owning", owning).withColumn("was", F.lag(owning, 1, False).over(order))
    # The next stop after each row: scanning backwards, the latest stop seen so far (a growing frame;
    # Spark recomputes frames that end at "unbounded following" for every row).
    after = Window.partitionBy(*KEYS).orderBy(F.col("ts").desc(), F.col("seq").desc()).rowsBetween(
        Window.unboundedPreceding, -1)
    end_event = F.struct("ts", "event", "source", "seq")
    rows = rows.withColumn("end", F.last(F.when(~F.col("owning"), end_event), True).over(after))
    starts = frames.with_horizon(rows.filter(F.col("owning") & ~F.col("was")))
    return starts.select(
        *KEYS, F.col("ts").alias("start"),
        F.coalesce(F.col("end.ts"), F.col("horizon")).alias("end"),
        F.to_json(F.struct(F.lit("ASSIGN").alias("event"), "source", "seq", "ts", "group", "client_id", "topic",
                           "broker", "queue_id", "epoch")).alias("assign"),
        F.when(F.col("end").isNotNull(), F.to_json(F.struct(
            F.col("end.event").alias("event"), F.col("end.source").alias("source"), F.col("end.seq").alias("seq"),
            F.col("end.ts").alias("ts"), "group", "client_id", "topic", "broker", "queue_id",
        ))).alias("ended"),
    )


def find(frames: TraceFrames, owned: DataFrame) -> DataFrame:
    p = frames.params
    a = owned.alias("a")
    b = owned.alias("b")
    cond = [F.col(f"a.{k}") == F.col(f"b.{k}") for k in QUEUE_KEYS]
    pairs = a.join(b, cond + [F.col("a.client_id") < F.col("b.client_id")])
    start = F.greatest("a.start", "b.start")
    overlap = F.least("a.end", "b.end") - start
    pairs = pairs.filter(overlap > p.overlap_window_ms * 1000)
    pairs = pairs.select(
        *[F.col(f"a.{k}").alias(k) for k in QUEUE_KEYS], F.col("a.client_id").alias("client_id"),
        F.col("b.client_id").alias("other"), start.alias("ts"), (overlap / 1000.0).alias("overlap_ms"),
        F.array("a.assign", "b.assign", "a.ended", "b.ended").alias("w"),
    )
    detail = F.to_json(F.struct(F.col("client_id").alias("client"), F.col("other").alias("other_client"),
                                F.col("overlap_ms")))
    return findings(
        pairs, "ownership-overlap", "REBAL-2", p.max_witnesses,
        value_ms=F.col("overlap_ms"), detail=detail, witnesses=F.col("w"),
    )
