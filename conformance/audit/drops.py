"""*pull after drop* and *commit after drop*: a client working on a queue it no longer owns.

Seed 001 §4-5: when a rebalance takes a queue away, the client marks its ProcessQueue dropped; a
dropped queue is never pulled again and its consume results are not committed (that would move the
new owner's offset under it). In the trace: a PULL_REQ by a client, or a COMMIT naming it, for a queue
after the client's REVOKE of that queue and before a new ASSIGN of it to the same client. One finding
per request or commit. Less than ``drop_grace_ms`` (500) after the REVOKE, a COMMIT is not one: in the same
rebalance round the seeds' client persists the removed queue's progress (removeUnnecessaryMessageQueue), what
was consumed before the drop; nor is a pull only the broker saw (it may have been sent before the drop, as the
REVOKE is recorded when the round decided). Apache RocketMQ's Java client does both milliseconds after.

Requests and commits are read through the client's view (the client's own rows when it recorded
any): a broker receives a pull the client sent before its REVOKE only after it, and would otherwise
make every in-flight pull look late. Events at the same microsecond are taken in the order ASSIGN,
requests, REVOKE, so a tie never produces a finding. The latest ownership change before each request
comes from the queue pass (:mod:`conformance.audit.queues`).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from conformance.audit.frames import TraceFrames
from conformance.audit.queues import COMMIT, REQ, REVOKE, QueuePass
from conformance.audit.schema import findings


def candidate() -> Column:
    """Queue-pass rows this module may report: requests and commits of a client that revoked the queue."""
    return F.col("kind").isin(REQ, COMMIT) & F.col("in_client_view") & (F.col("owned_kind") == REVOKE)


def find(frames: TraceFrames, queue: QueuePass) -> DataFrame:
    p = frames.params
    # Right after the REVOKE: a commit is the drop's own persist of the queue's progress (seed 001 §4), and a pull
    # only the broker saw may have been sent before the drop.
    # (Filtered once named: the recorder's name is known there, and the candidates are few.)
    soon = F.col("ts") - F.col("owned_ts") < p.drop_grace_ms * 1000
    in_flight = (F.col("kind") == REQ) & F.col("source").startswith("broker:")
    rows = queue.named(queue.candidates.filter(candidate())).filter(~(soon & ((F.col("kind") == COMMIT) | in_flight)))
    is_pull = F.col("kind") == REQ
    revoke = F.to_json(F.struct(
        F.lit("REVOKE").alias("event"), queue.source(F.col("owned_src")).alias("source"),
        F.col("owned_seq").alias("seq"),
        F.col("owned_ts").alias("ts"), "group", "client_id", "topic", "broker", "queue_id",
        F.col("owned_epoch").alias("epoch"),
    ))
    after = (F.col("ts") - F.col("owned_ts")) / 1000.0
    return findings(
        rows, F.when(is_pull, "pull-after-drop").otherwise("commit-after-drop"),
        F.when(is_pull, "REBAL-4").otherwise("REBAL-5"), p.max_witnesses,
        value_ms=after, detail=F.to_json(F.struct(after.alias("after_revoke_ms"))),
        witnesses=F.array(revoke, F.to_json(F.struct(
            F.when(is_pull, "PULL_REQ").otherwise("COMMIT").alias("event"), "source", "seq", "ts", "group",
            "client_id", "topic", "broker", "queue_id", "offset"))),
    )
