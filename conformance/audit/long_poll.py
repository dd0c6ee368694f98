"""Long-poll timing: *early* and *late* empty answers to held pulls, and the wake-up latency of pulls
woken by a matching message (a distribution, and *slow-wake* findings above the bound).

Each PULL_RESP is paired with its PULL_REQ (same recorder, client, queue and offset; the broker's
view) and given the first message at or above the requested offset that matches the group's
subscription (both in :mod:`conformance.audit.queues`). For a request that asked to suspend:

* *early* (LPOLL-2): answered with no message before ``suspend_ms`` although no matching message had arrived
  by the answer, and no message at all: LPOLL-2 lets a periodic check answer a request once any message
  arrived at or after its offset, whatever its filter (Apache RocketMQ's checkHoldRequest passes no tag
  code), which the answer shows by a ``max_offset`` past the requested offset. Only answers that were, or
  should have been, held count: ``held_ms > 0``, or a status whose response code is PULL_NOT_FOUND (the ones
  the broker suspends on, owned by :func:`reference.broker.pull_processor.response_code_for`);
  OFFSET_TOO_SMALL and friends are answered at once by design, and so is an error answer (a status that is no
  GetMessageStatus, e.g. SUBSCRIPTION_NOT_LATEST while the broker has not yet seen a client's new subscription:
  found in a recording of Apache RocketMQ's Java client, where ``held_ms`` is the round trip).
* *late* (LPOLL-3): answered with no message after ``suspend_ms`` + the hold-check interval + the tolerance.
* *wake latency* (LPOLL-4): for an answer with messages whose waking message arrived while the request was
  held, the answer time minus that message's SEND; above the wake bound it is *slow-wake*.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from conformance.audit.frames import TraceFrames
from conformance.audit.params import AuditParams
from conformance.audit.queues import RESP, QueuePass
from conformance.audit.schema import findings, ms, witness
from reference.rules.codes import ResponseCode, response_code_for
from reference.rules.status import GetMessageStatus


def _holdable() -> Column:
    """The statuses the broker suspends a request on (response code PULL_NOT_FOUND), per offset."""
    any_offset = [s.name for s in GetMessageStatus if response_code_for(s, 1) == ResponseCode.PULL_NOT_FOUND]
    at_zero = [s.name for s in GetMessageStatus if response_code_for(s, 0) == ResponseCode.PULL_NOT_FOUND]
    return F.col("status").isin(*any_offset) | ((F.col("offset") == 0) & F.col("status").isin(*at_zero))


def _paired() -> Column:
    """A paired answer to a request that asked to suspend."""
    return (F.col("kind") == RESP) & F.col("req_ts").isNotNull() & (F.col("req_suspend_ms") > 0)


def _elapsed_us() -> Column:
    return F.col("ts") - F.col("req_ts")


def _latency_us() -> Column:
    """Answer time minus the waking SEND, for an answer with messages whose waking message arrived while
    the request was held."""
    woken = (F.col("count") > 0) & F.col("wake_ts").isNotNull() & (F.col("wake_ts") >= F.col("req_ts")) & (
        F.col("wake_ts") <= F.col("ts"))
    return F.when(woken, F.col("ts") - F.col("wake_ts"))


def _conditions(p: AuditParams) -> tuple[Column, Column, Column]:
    """(early, late, slow) for paired answers."""
    suspend = ms(F.col("req_suspend_ms"))
    arrived = F.col("wake_ts").isNotNull() & (F.col("wake_ts") <= F.col("ts"))
    empty = F.col("count") == 0
    grew = F.coalesce(F.col("max_offset") > F.col("offset"), F.lit(False))
    # An error answer (SUBSCRIPTION_NOT_LATEST, SYSTEM_ERROR ...: a status that is no GetMessageStatus) was never a
    # hold: the broker refused the request before looking at the queue.
    stored = F.col("status").isin(*[s.name for s in GetMessageStatus])
    early = empty & stored & ((F.col("held_ms") > 0) | _holdable()) & (_elapsed_us() < suspend) & ~arrived & ~grew
    late = empty & (_elapsed_us() > suspend + ms(p.hold_check_interval_ms + p.poll_tolerance_ms))
    slow = F.coalesce(_latency_us() > ms(p.wake_bound_ms), F.lit(False))
    return early, late, slow


def candidate(p: AuditParams) -> Column:
    """Queue-pass rows this module may report."""
    early, late, slow = _conditions(p)
    return _paired() & (early | late | slow)


def find(frames: TraceFrames, queue: QueuePass) -> DataFrame:
    p = frames.params
    early, late, slow = _conditions(p)
    rows = queue.with_msg_id(queue.named(queue.candidates.filter(candidate(p))), "wake_src", "wake_seq",
                             "wake_msg_id").withColumns(
        {"elapsed_us": _elapsed_us(), "latency_us": _latency_us()})
    category = F.when(early, "early-poll-return").when(late, "late-poll-return").otherwise("slow-wake")
    requirement = F.when(early, "LPOLL-2").when(late, "LPOLL-3").otherwise("LPOLL-4")
    value = F.when(slow & ~early & ~late, F.col("latency_us")).otherwise(F.col("elapsed_us")) / 1000.0
    request = F.to_json(F.struct(
        F.lit("PULL_REQ").alias("event"), "source", F.col("req_seq").alias("seq"),
        F.col("req_ts").alias("ts"), "group", "client_id", "topic", "broker", "queue_id", "offset",
        F.col("req_suspend_ms").alias("suspend_ms"), F.col("req_max_nums").alias("max_nums"),
    ))
    response = witness("group", "client_id", "topic", "broker", "queue_id", "offset", "status", "next_offset",
                       "min_offset", "max_offset", "count", "held_ms", event="PULL_RESP")
    waker = F.when(F.col("wake_ts").isNotNull(), F.to_json(F.struct(
        F.lit("SEND").alias("event"), queue.source(F.col("wake_src")).alias("source"), F.col("wake_seq").alias("seq"),
        F.col("wake_ts").alias("ts"), "topic", "broker", "queue_id", F.col("wake_offset").alias("offset"),
        F.col("wake_msg_id").alias("msg_id"),
    )))
    detail = F.to_json(F.struct(
        F.col("req_suspend_ms").alias("suspend_ms"), (F.col("elapsed_us") / 1000.0).alias("answered_after_ms"),
        (F.col("latency_us") / 1000.0).alias("wake_latency_ms"),
    ))
    return findings(
        rows, category, requirement, p.max_witnesses,
        msg_id=F.col("wake_msg_id"), value_ms=value, detail=detail, witnesses=F.array(request, response, waker),
    )


#: Upper bounds (ms) of the wake-latency histogram buckets; the last bucket is open.
LATENCY_BUCKETS_MS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000)


def latency_ms() -> Column:
    """The wake latency of a queue-pass row in ms (null unless it is a woken answer)."""
    return F.when(_paired(), _latency_us() / 1000.0)


def latency_bucket(latency: Column) -> Column:
    """Histogram bucket i holds latencies <= LATENCY_BUCKETS_MS[i] (and above the previous bound); the
    last bucket everything above."""
    bucket = F.lit(len(LATENCY_BUCKETS_MS))
    for i, bound in reversed(list(enumerate(LATENCY_BUCKETS_MS))):
        bucket = F.when(latency <= bound, F.lit(i)).otherwise(bucket)
    return bucket
