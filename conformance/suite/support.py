"""Helpers the conformance tests share, and the spec oracle of the offset correction.

:func:`expected_correction` is typed from the sentences of OFFSET-1..5 (seed 002 §1), not imported
from the reference, so that a fault in the reference's table cannot hide in the expectation; the
property suites use the same oracle.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TypeAlias

import pytest

from conformance.targets import PendingPop, PendingPull, SendReceipt, StoreLayoutTarget, Target
from conformance.targets.patience import visible

#: OFFSET-4: beyond the max offset of a queue whose min is 0, the seed's broker (RocketMQ up to 4.9.3) goes
#: back to 0; since 4.9.4 (ISSUE #4215, DefaultMessageStore.getMessage) Apache RocketMQ goes to the max offset
#: instead, to stop a consumer re-reading the whole queue. Both conform.


#: The ``settings`` fixture (conftest): ``settings(name=value, ...)`` changes broker settings for the test.
Settings: TypeAlias = Callable[..., None]
#: pytest's ``record_property`` fixture: ``record_property(name, value)``.
RecordProperty: TypeAlias = Callable[[str, object], None]


#: Bodies for the retention tests are an eighth of a commit-log segment, capped at this: well under RocketMQ's
#: default maxMessageSize (4 MiB).
MAX_BODY_BYTES = 1 << 20
#: Segments larger than this are too large to fill three of in a test (Apache RocketMQ's default is 1 GiB:
#: its runner should configure smaller ones for gating).
MAX_SEGMENT_BYTES = 256 << 20
#: Over the wire: how long a broker may take to answer a request that must not be held (a pull without SUSPEND,
#: a pop with poll time 0), or a held one after its waking event. A loaded machine and a JVM just restarted take
#: more than a moment (a pop right after 5.5.0's restart took over 0.5 s beside another lane of CI); a broker that
#: holds such a request instead holds it for a check interval of its hold service (5 s in RocketMQ) or longer.
WIRE_WAKE_S = 3.0


def fill(target: Target, topic: str, n: int, tags: str = "A", queue: int = 0) -> None:
    """Send ``n`` messages of about 100 bytes with ``tags`` to one queue, and return once a pull can see them:
    Apache RocketMQ builds the consume queue after it acknowledged the send, so a pull at once may miss the last."""
    last = None
    for i in range(n):
        last = target.send(topic, queue, f"m{i}".encode() * 50, tags)
    if last is not None:
        visible(target, topic, queue, last.queue_offset + 1)


#: OFFSET-10's batches: maxTransferCountOnMessageInMemory and maxTransferCountOnMessageInDisk (seed 002 §1
#: isTheBatchFull); bodies of the byte-limit checks, and how many records of them a pull returns: 8 fit in 256 KiB
#: and 2 in 64 KiB (a 9th or a 3rd would pass it) whatever a broker's record header adds, up to 2 KB.
IN_MEMORY_COUNT, IN_DISK_COUNT = 32, 8
BIG_BODY = 30_000
IN_MEMORY_BIG, IN_DISK_BIG = 8, 2
#: Messages of the batch tests' small-body queue: more than one in-memory batch holds.
SMALL_MESSAGES, BIG_MESSAGES = 40, 10


def batch_queues(target: Target, topic: str) -> None:
    """``topic`` with two queues: queue 0 holds 40 small messages, queue 1 ten of ``BIG_BODY`` bytes (tag A)."""
    target.create_topic(topic, 2)
    for i in range(SMALL_MESSAGES):
        target.send(topic, 0, b"m%d" % i, "A")
    for _ in range(BIG_MESSAGES):
        target.send(topic, 1, bytes(BIG_BODY), "A")
    visible(target, topic, 0, SMALL_MESSAGES)
    visible(target, topic, 1, BIG_MESSAGES)


def body(tag: str, i: int, size: int) -> bytes:
    """Message ``i``'s body of ``size`` bytes: recomputable, so nothing large is kept to compare."""
    stamp = f"{tag}:{i}:".encode()
    return (stamp * (size // len(stamp) + 1))[:size]


def segment_bytes(target: StoreLayoutTarget) -> int:
    """The target's commit-log segment size (capability ``store_layout``); not applicable when too large to fill."""
    size = target.store_layout().commitlog_segment_bytes
    if size > MAX_SEGMENT_BYTES:
        pytest.skip(f"not applicable: commit-log segments of {size} bytes are too large to fill in a test "
                    f"(at most {MAX_SEGMENT_BYTES})")
    return size


def fill_three_segments(target: Target, topic: str, queue: int, segment: int) -> list[SendReceipt]:
    """Send bodies of an eighth of a segment to one queue until they reach a third commit-log segment: the
    first two are then complete and the third is the one being written. The receipts, in order."""
    size = min(segment // 8, MAX_BODY_BYTES)
    limit = math.ceil(4 * segment / size) + 8
    receipts: list[SendReceipt] = []
    offsets: list[int] = []
    for i in range(limit):
        r = target.send(topic, queue, body(topic, i, size))
        if r.commit_log_offset is None:
            pytest.skip("not applicable: the target does not report commit-log offsets")
        receipts.append(r)
        offsets.append(r.commit_log_offset)
        if offsets[-1] // segment >= offsets[0] // segment + 2:
            visible(target, topic, queue, r.queue_offset + 1)
            return receipts
    span = f"{offsets[0]} .. {offsets[-1]}"
    raise AssertionError(f"{limit} messages of {size} bytes did not span three commit-log segments of {segment} "
                         f"bytes: commit-log offsets {span}")


def log_offset(receipt: SendReceipt) -> int:
    """Where a sent message starts in the commit log, on a target that tells (:func:`fill_three_segments` skips a
    test on one that does not)."""
    assert receipt.commit_log_offset is not None, f"the target reported no commit-log offset for {receipt}"
    return receipt.commit_log_offset


#: Seed 002 §2: fileReservedTime, 72 h; an aged queue's old messages are this much plus an hour old.
HOUR_MS = 3_600_000
FILE_RESERVED_MS = 72 * HOUR_MS


def aged_queue(target: StoreLayoutTarget, topic: str, young: int = 50) -> tuple[int, int, int]:
    """A queue whose first two commit-log segments hold only messages past fileReservedTime, retention run:
    ``(old, min, max)`` with ``old`` the messages sent before the clock moved. Sized from the target's own
    segments (``store_layout``), never the reference's: a broker started with its default segment size is judged
    as it is, and one whose segments are too large to fill here is not applicable (``segment_bytes``)."""
    receipts = fill_three_segments(target, topic, 0, segment_bytes(target))
    target.advance(FILE_RESERVED_MS + HOUR_MS)
    fill(target, topic, young)
    target.run_retention()
    lo, hi = target.min_max(topic, 0)
    return len(receipts), lo, hi


def expected_correction(offset: int, lo: int, hi: int) -> tuple[str, int] | None:
    """(status, nextBeginOffset) for a pull at ``offset`` of a queue holding [lo, hi); None when the
    offset is legal and the queue must be read."""
    if hi == 0:
        return "NO_MESSAGE_IN_QUEUE", 0
    if offset < lo:
        return "OFFSET_TOO_SMALL", lo
    if offset == hi:
        return "OFFSET_OVERFLOW_ONE", offset
    if offset > hi:
        return "OFFSET_OVERFLOW_BADLY", lo if lo == 0 else hi
    return None


def allowed_corrections(offset: int, lo: int, hi: int) -> tuple[str, frozenset[int]] | None:
    """(status, every nextBeginOffset a conforming broker may answer) for a pull at ``offset`` of [lo, hi):
    :func:`expected_correction`, widened where the spec allows two answers (OFFSET-4)."""
    want = expected_correction(offset, lo, hi)
    if want is None:
        return None
    status, nxt = want
    if status == "OFFSET_OVERFLOW_BADLY" and lo == 0:
        return status, frozenset({0, hi})
    return status, frozenset({nxt})


def answered(target: Target, pending: PendingPull | PendingPop) -> bool:
    """Whether a request is answered: at once on simulated time (capability ``clock_control``), within
    :data:`WIRE_WAKE_S` on the wire."""
    if "clock_control" in target.capabilities:
        return bool(pending.done())
    deadline = time.monotonic() + WIRE_WAKE_S
    while not pending.done():
        if time.monotonic() > deadline:
            return False
    return True
