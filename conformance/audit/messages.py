"""*lost*, *expired* and *pending*: expected messages that no consumer saw OK.

trace-schema.md: a SEND matching a group's subscription, at or above the start offset, never
CONSUMEd OK by the group (broadcasting: by each client) is *expired* when a RETENTION min offset
rose above it before it was consumed (reported, not a violation), *pending* when it was sent after
the horizon minus the settle time (it may still be in flight), and otherwise *lost*. One finding per
(consumer, message). The expected messages and their expiry come from :mod:`conformance.audit.queues`.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from conformance.audit.frames import TraceFrames
from conformance.audit.queues import MSG, QueuePass
from conformance.audit.schema import findings, ms, witness


def candidate() -> Column:
    """Queue-pass rows this module may report: expected messages nobody finished with."""
    return (F.col("kind") == MSG) & F.col("expected") & F.col("done_ts").isNull()


def find(frames: TraceFrames, queue: QueuePass) -> DataFrame:
    p = frames.params
    unseen = queue.with_msg_id(queue.named(queue.candidates.filter(candidate())), "src", "seq", "msg_id")
    unseen = frames.with_horizon(unseen)
    expired = F.col("expire_ts").isNotNull()
    pending = ~expired & (F.col("ts") >= F.col("horizon") - ms(p.settle_ms))
    category = F.when(expired, "expired").when(pending, "pending").otherwise("lost")
    requirement = F.when(F.col("owner") != "", "ALO-2").otherwise("ALO-1")
    send = witness("topic", "broker", "queue_id", "offset", "msg_id", event="SEND")
    start = F.to_json(F.struct(
        F.lit("ASSIGN").alias("event"), F.col("start.source").alias("source"), F.col("start.seq").alias("seq"),
        F.col("start.ts").alias("ts"), F.col("group"), F.col("start.client_id").alias("client_id"),
        F.col("start.offset").alias("offset"), F.col("start.epoch").alias("epoch"),
    ))
    retention = F.when(expired, F.to_json(F.struct(
        F.lit("RETENTION").alias("event"), queue.source(F.col("expire_src")).alias("source"),
        F.col("expire_seq").alias("seq"), F.col("expire_ts").alias("ts"), "topic", "broker", "queue_id",
        F.col("expire_min_offset").alias("min_offset"),
    )))
    # Clustering, the consumer is the group (``owner`` is empty): no one client was answerable for the message, so
    # the finding names none (an empty "client" read as a client with no name); broadcasting, it is the client.
    detail = F.to_json(F.struct(
        F.when(F.col("owner") != "", F.col("owner")).alias("client"),
        F.when(F.col("owner") != "", "client (broadcasting)").otherwise("group (clustering)").alias("consumer"),
        F.col("start.offset").alias("start_offset"),
        (F.col("horizon") - F.col("ts")).alias("age_at_horizon_us"),
    ))
    return findings(
        unseen, category, requirement, p.max_witnesses,
        ts=F.col("ts"), client_id=F.when(F.col("owner") != "", F.col("owner")), detail=detail,
        witnesses=F.array(send, start, retention),
    )
