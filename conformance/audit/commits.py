"""*unsafe commit*: a COMMIT of offset o for a consumer's queue while an expected message below o, not
expired, was not yet consumed OK.

A consumer that commits past a message it has not finished loses that message if it crashes before
finishing (the next owner starts at the commit): RocketMQ's offset store commits the smallest offset
still in the ProcessQueue for exactly this reason (seed 001 §5). The queue pass gives each COMMIT the
expected message below it that was settled last; the commit is unsafe when that happened after the
commit (or never). One finding per COMMIT; the witnesses are the COMMIT and that message's SEND.

Commits are read through the client's view when the client recorded them, else the broker's (which
records accepted offset updates), so one commit is not judged twice.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from conformance.audit.frames import TraceFrames
from conformance.audit.queues import COMMIT, QueuePass
from conformance.audit.schema import NEVER, findings, witness


def candidate() -> Column:
    """Queue-pass rows this module may report: commits some expected message below settled after."""
    return (F.col("kind") == COMMIT) & (F.col("blocking_settle_ts") > F.col("ts"))


def find(frames: TraceFrames, queue: QueuePass) -> DataFrame:
    p = frames.params
    rows = queue.with_msg_id(queue.named(queue.candidates.filter(candidate())), "blocking_src", "blocking_seq",
                             "blocking_msg_id")
    blocked = F.to_json(F.struct(
        F.lit("SEND").alias("event"), queue.source(F.col("blocking_src")).alias("source"),
        F.col("blocking_seq").alias("seq"), F.col("blocking_ts").alias("ts"), F.col("topic"), F.col("broker"),
        F.col("queue_id"), F.col("blocking_offset").alias("offset"), F.col("blocking_msg_id").alias("msg_id"),
    ))
    settled = F.when(F.col("blocking_settle_ts") < NEVER, F.col("blocking_settle_ts"))
    detail = F.to_json(F.struct(
        F.col("blocking_offset").alias("unconsumed_offset"), F.col("blocking_msg_id").alias("unconsumed_msg_id"),
        settled.alias("settled_ts"),
    ))
    return findings(
        rows, "unsafe-commit", "CONSUME-2", p.max_witnesses,
        msg_id=F.col("blocking_msg_id"), detail=detail,
        witnesses=F.array(witness("group", "client_id", "topic", "broker", "queue_id", "offset", event="COMMIT"),
                          blocked),
    )
