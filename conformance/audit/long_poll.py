"""Long-poll timing: *early* and *late* empty answers to held pulls, and the wake-up latency of pulls
woken by a matching message (a distribution, and *slow-wake* findings above the bound).

Each PULL_RESP is paired with its PULL_REQ (same recorder, client, queue and offset; the broker's
view) and given the first message at or above the requested offset that matches the group's
subscription (both in :mod:`conformance.audit.queues`). For a request that asked to suspend:

* *early* (LPOLL-2): answered with no message before ``suspend_ms`` although no matching message had
  arrived by the answer. Only answers that were, or should have been, held count: ``held_ms > 0``, or
  a status whose response code is PULL_NOT_FOUND (the ones the broker suspends on, owned by
  :func:`reference.broker.pull_processor.response_code_for`); OFFSET_TOO_SMALL and friends are
  answered at once by design.
* *late* (LPOLL-3): answered with no message after ``suspend_ms`` + the hold-check interval + the
  tolerance.
* *wake latency* (LPOLL-4): for an answer with messages whose waking message arrived while the
  request was held, the answer time minus that message's SEND; above the wake bound it is *slow-wake*.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from conformance.audit.frames import TraceFrames
from conformance.audit.queues import RESP, QueuePass
from conformance.audit.schema import findings, ms, witness
from reference.broker.protocol import ResponseCode
from reference.broker.pull_processor import response_code_for
from reference.store.status import GetMessageStatus


def _holdable() -> Column:
    """The statuses the broker suspends a request on (response code PULL_NOT_FOUND), per offset."""
    any_offset = [s.name for s in GetMessageStatus if response_code_for(s, 1) == ResponseCode.PULL_NOT_FOUND]
    at_zero = [s.name for s in GetMessageStatus if response_code_for(s, 0) == ResponseCode.PULL_NOT_FOUND]
    return F.col("status").isin(*any_offset) | ((F.col("offset") == 0) & F.col("status").isin(*at_zero))


def answers(queue_rows: DataFrame) -> DataFrame:
    """Paired answers to requests that asked to suspend, with ``elapsed_us`` and ``latency_us``."""
    rows = queue_rows.filter((F.col("kind") == RESP) & F.col("req").isNotNull() & (F.col("req.suspend_ms") > 0))
    woken = F.col("wake").isNotNull() & (F.col("wake.ts") >= F.col("req.ts")) & (F.col("wake.ts") <= F.col("ts"))
    return rows.withColumn("elapsed_us", F.col("ts") - F.col("req.ts")).withColumn(
        "latency_us", F.when((F.col("count") > 0) & woken, F.col("ts") - F.col("wake.ts"))
    )


def find(frames: TraceFrames, queue: QueuePass) -> DataFrame:
    p = frames.params
    rows = answers(queue.rows)
    suspend = ms(F.col("req.suspend_ms"))
    arrived = F.col("wake").isNotNull() & (F.col("wake.ts") <= F.col("ts"))
    empty = F.col("count") == 0
    early = empty & ((F.col("held_ms") > 0) | _holdable()) & (F.col("elapsed_us") < suspend) & ~arrived
    late = empty & (F.col("elapsed_us") > suspend + ms(p.hold_check_interval_ms + p.poll_tolerance_ms))
    slow = F.col("latency_us") > ms(p.wake_bound_ms)
    rows = queue.named(rows.filter(early | late | slow))
    category = F.when(early, "early-poll-return").when(late, "late-poll-return").otherwise("slow-wake")
    requirement = F.when(early, "LPOLL-2").when(late, "LPOLL-3").otherwise("LPOLL-4")
    value = F.when(slow & ~early & ~late, F.col("latency_us")).otherwise(F.col("elapsed_us")) / 1000.0
    request = F.to_json(F.struct(
        F.lit("PULL_REQ").alias("event"), "source", F.col("req.seq").alias("seq"),
        F.col("req.ts").alias("ts"), "group", "client_id", "topic", "broker", "queue_id", "offset",
        F.col("req.suspend_ms").alias("suspend_ms"), F.col("req.max_nums").alias("max_nums"),
    ))
    response = witness("group", "client_id", "topic", "broker", "queue_id", "offset", "status", "next_offset",
                       "min_offset", "max_offset", "count", "held_ms", event="PULL_RESP")
    waker = F.when(F.col("wake").isNotNull(), F.to_json(F.struct(
        F.lit("SEND").alias("event"), queue.source(F.col("wake.src")).alias("source"), F.col("wake.seq").alias("seq"),
        F.col("wake.ts").alias("ts"), "topic", "broker", "queue_id", F.col("wake.offset").alias("offset"),
        F.col("wake.msg_id").alias("msg_id"),
    )))
    detail = F.to_json(F.struct(
        F.col("req.suspend_ms").alias("suspend_ms"), (F.col("elapsed_us") / 1000.0).alias("answered_after_ms"),
        (F.col("latency_us") / 1000.0).alias("wake_latency_ms"),
    ))
    return findings(
        rows, category, requirement, p.max_witnesses,
        msg_id=F.col("wake.msg_id"), value_ms=value, detail=detail, witnesses=F.array(request, response, waker),
    )


#: Upper bounds (ms) of the wake-latency histogram buckets; the last bucket is open.
LATENCY_BUCKETS_MS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000)


def latency_histogram(queue: QueuePass) -> DataFrame:
    """(run, bucket, count, max_ms, sum_ms) of wake latencies; bucket i holds latencies <=
    LATENCY_BUCKETS_MS[i] (and above the previous bound); the last bucket everything above."""
    lat = answers(queue.rows).filter(F.col("latency_us").isNotNull()).select(
        "lane_key", (F.col("latency_us") / 1000.0).alias("ms"))
    bucket = F.lit(len(LATENCY_BUCKETS_MS))
    for i, bound in reversed(list(enumerate(LATENCY_BUCKETS_MS))):
        bucket = F.when(F.col("ms") <= bound, F.lit(i)).otherwise(bucket)
    per_lane = lat.withColumn("bucket", bucket).groupBy("lane_key", "bucket").agg(
        F.count("*").alias("count"), F.max("ms").alias("max_ms"), F.sum("ms").alias("sum_ms"))
    runs = F.broadcast(queue.lanes.select("lane_key", "run"))
    return per_lane.join(runs, "lane_key").groupBy("run", "bucket").agg(
        F.sum("count").alias("count"), F.max("max_ms").alias("max_ms"), F.sum("sum_ms").alias("sum_ms"))
