"""STORE, QOFF-2 and RETAIN requirements on a broker whose runner can restart it and expire its retention.

These tests need what only the owner of the broker process can do — restart it (capability ``restart``, and
``kill_restart`` for a restart as after SIGKILL), expire its retention now (``retention_expire``) and say how
big its segments are (``store_layout``) — which a ``remoting://`` target gets from its runner's control
channel (``conformance.targets.control``). They run on real time and claim only what the wire shows: queue
offsets, commit-log offsets (from message ids), bodies, min and max offsets and pull answers. Every expectation
is one a correct Apache RocketMQ broker (4.9.7, 5.x) meets as well as the reference:

* a process kill keeps what was appended (ASYNC flush: the bytes are in the OS page cache), and recovery keeps
  queue offsets and commit-log offsets; the topic table and, after a clean shutdown, consumer offsets are
  persisted (RocketMQ's topics.json and consumerOffset.json);
* a clean run with every commit-log segment but the one being written expired deletes exactly those, and each
  queue's min offset rises to its first message in the segment that is left (DefaultMessageStore's
  CleanCommitLogService, then CleanConsumeQueueService and ConsumeQueue.correctMinOffset);
* sizes come from the target (``store_layout``), never from the reference's defaults.

A restart or an expiry acts on the whole broker: run these tests with the broker to yourself (one worker, as
``mqtck conform`` does by default).
"""

from __future__ import annotations

import time
from typing import Protocol

import pytest

from conformance.suite.support import MAX_BODY_BYTES, body, fill_three_segments, log_offset, segment_bytes
from conformance.targets import (
    ExpiryTarget,
    FreshStoreTarget,
    KillRestartTarget,
    MalformedAnswer,
    PulledMessage,
    SendReceipt,
    Target,
    TargetError,
    TornRestartTarget,
)
from conformance.targets.patience import visible


class RestartableExpiryTarget(ExpiryTarget, KillRestartTarget, Protocol):
    """A target with retention_expire, store_layout and restart (kill_restart when killed)."""


class FreshExpiryTarget(ExpiryTarget, FreshStoreTarget, Protocol):
    """A target with retention_expire, store_layout and fresh_store."""


#: Body sizes of the restart tests: small ones and ones of several KiB (never empty: RocketMQ's clients refuse
#: an empty body, and a 5.x broker fails on one).
RESTART_SIZES = (1, 100, 1_000, 4_000, 12_000, 30_000, 7)
T = "SW"


def pull_all(target: Target, topic: str, queue: int, start: int, end: int, group: str = "G") -> list[PulledMessage]:
    """Every message in ``[start, end)`` of one queue, by consecutive pulls from ``start``."""
    out: list[PulledMessage] = []
    offset = start
    while offset < end:
        r = target.start_pull(group, topic, queue, offset).result()
        assert r.status == "FOUND" and r.messages, f"pull at {offset} of [{start}, {end}): {r.code} {r.status}"
        out.extend(r.messages)
        assert r.next_begin_offset > offset, f"pull at {offset} did not move on: nextBeginOffset {r.next_begin_offset}"
        offset = r.next_begin_offset
    return out


def _send_mixed(target: Target, queues: int) -> list[tuple[int, SendReceipt, bytes]]:
    """Messages of RESTART_SIZES round-robin over the queues: (queue, receipt, body)."""
    sent = []
    for i, size in enumerate(RESTART_SIZES * 2):
        q = i % queues
        b = body("r", i, size)
        sent.append((q, target.send(T, q, b, "A" if i % 2 else None), b))
    return sent


def _check_kept(target: Target, sent: list[tuple[int, SendReceipt, bytes]], queues: int) -> None:
    """Every sent message is pullable at its queue offset with its body, tags, id and commit-log offset."""
    for q in range(queues):
        mine = [(r, b) for queue, r, b in sent if queue == q]
        lo, hi = target.min_max(T, q)
        assert (lo, hi) == (0, len(mine)), f"queue {q}: [min, max) after the restart"
        pulled = pull_all(target, T, q, 0, hi)
        assert [m.queue_offset for m in pulled] == [r.queue_offset for r, _ in mine], f"queue {q}: queue offsets"
        for m, (r, b) in zip(pulled, mine, strict=True):
            assert m.body == b, f"queue {q} offset {m.queue_offset}: body changed ({len(m.body)} of {len(b)} bytes)"
            assert m.msg_id == r.msg_id, f"queue {q} offset {m.queue_offset}: message id"
            if m.commit_log_offset is not None and r.commit_log_offset is not None:
                assert m.commit_log_offset == r.commit_log_offset, f"queue {q} {m.queue_offset}: commit-log offset"


#: A clean restart, which also judges committed offsets (persisted at shutdown: QOFF-2), and one as after SIGKILL.
RESTARTS = [
    pytest.param(False, id="clean", marks=(pytest.mark.req("STORE-5", "QOFF-2"),
                                           pytest.mark.needs("commit_offset", "query_offset"))),
    # A killed process is upstream's and mqtck's promise, not seed 002's (STORE-26, split from STORE-5).
    pytest.param(True, id="kill", marks=(pytest.mark.req("STORE-26"), pytest.mark.needs("kill_restart"))),
]
#: The topic of the topic-table check (three queues: a re-created topic would have another count).
T3 = "SW3"


def restart(target: KillRestartTarget, kill: bool) -> None:
    """A clean restart (every target with ``restart``), or one as after SIGKILL (``kill_restart``)."""
    if kill:
        target.restart(kill=True)
    else:
        target.restart()


@pytest.mark.req("STORE-8")
@pytest.mark.needs("pull", "restart")
@pytest.mark.parametrize("kill", RESTARTS)
def test_messages_topics_and_offsets_survive_a_restart(target: KillRestartTarget, kill: bool) -> None:
    """One restart for what a broker must keep across it (a JVM broker takes 10-20 s to restart): every sent
    message with its offsets and body (STORE-5 clean, STORE-26 killed), the topic table (STORE-8) and, after a
    clean restart, the committed consumer offsets (QOFF-2)."""
    target.create_topic(T, 2)
    target.create_topic(T3, 3)
    sent = _send_mixed(target, 2)
    assert [r.queue_offset for q, r, _ in sent if q == 0] == list(range(len(RESTART_SIZES)))
    for q in range(3):
        target.send(T3, q, f"q{q}".encode())
    committed = {("G1", 0): 3, ("G1", 1): 5, ("G2", 0): 1}
    if not kill:
        for (group, q), offset in committed.items():
            target.commit_offset(group, T, q, offset)
        target.commit_offset("G1", T, 0, 4)  # replaces 3
        committed[("G1", 0)] = 4
    restart(target, kill)
    # STORE-5: the messages, and appending goes on after the recovered end of each queue.
    _check_kept(target, sent, 2)
    r = target.send(T, 1, b"after", None)
    assert r.queue_offset == len(RESTART_SIZES), "appending goes on after the recovered end of the queue"
    visible(target, T, 1, r.queue_offset + 1)  # Apache RocketMQ dispatches to the queue after acknowledging
    (m,) = target.start_pull("G", T, 1, r.queue_offset).result().messages
    assert m.body == b"after"
    # STORE-8: the topic keeps its three queues; a fourth must not exist (auto-creation would change the count).
    for q in range(3):
        again = target.send(T3, q, f"again{q}".encode())
        assert (again.queue_id, again.queue_offset) == (q, 1), f"queue {q} of {T3} after the restart"
    with pytest.raises(TargetError):
        target.send(T3, 3, b"no such queue")
    visible(target, T3, 2, 2)
    assert target.min_max(T3, 2) == (0, 2)
    if not kill:  # QOFF-2
        for (group, q), offset in committed.items():
            assert target.query_offset(group, T, q) == ("SUCCESS", offset), f"{group} queue {q} after a clean restart"


@pytest.mark.req("STORE-6")
@pytest.mark.needs("pull", "torn_restart")
def test_recovery_cuts_the_log_at_a_torn_record(target: TornRestartTarget) -> None:
    """The newest record is torn (its magic overwritten) in the files of a killed broker: after recovery the
    queue ends before it, every earlier message is intact, the next send takes its queue offset, and the first
    record appended after the restart takes its place in the commit log: the test's next send, or one of the
    broker's own (:meth:`~conformance.targets.Target.record_at` tells whose and when)."""
    topic = "ST6"
    target.create_topic(topic, 1)
    bodies = [body("t", i, size) for i, size in enumerate(RESTART_SIZES)]
    sent = [(target.send(topic, 0, b, "A"), b) for b in bodies]
    torn = sent[-1][0]
    if torn.commit_log_offset is None:
        pytest.skip("not applicable: the target does not report commit-log offsets")
    visible(target, topic, 0, len(sent))
    torn_at_ms = time.time_ns() // 1_000_000
    target.restart_torn(torn.commit_log_offset)
    kept = len(sent) - 1
    assert target.min_max(topic, 0) == (0, kept), "the queue ends before the torn record"
    pulled = pull_all(target, topic, 0, 0, kept)
    assert len(pulled) == kept, f"{len(pulled)} messages before the torn one, {kept} sent"
    for m, (r, b) in zip(pulled, sent, strict=False):
        assert (m.queue_offset, m.body, m.msg_id) == (r.queue_offset, b, r.msg_id), f"offset {m.queue_offset}"
    reply = target.start_pull("G", topic, 0, kept).result()
    assert reply.status != "FOUND", f"the torn record was returned: {reply.messages}"
    again = target.send(topic, 0, b"after the tear", "A")
    assert again.queue_offset == kept, "the next send takes the torn record's queue offset"
    if again.commit_log_offset == torn.commit_log_offset:
        return
    # The broker appended records of its own first (RocketMQ 5.5.0's revive log did, under load): the first append
    # after recovery is then theirs, and it must start where the torn record did.
    assert again.commit_log_offset is not None and again.commit_log_offset > torn.commit_log_offset, (
        f"the next send went to {again.commit_log_offset}, before the torn record's place {torn.commit_log_offset}")
    first = target.record_at(torn.commit_log_offset)
    assert first is not None, (
        f"the next send went to {again.commit_log_offset}, and no record starts at the torn record's place "
        f"{torn.commit_log_offset}: the log was not continued from the cut")
    assert first.msg_id != torn.msg_id, "the torn record is still in the commit log"
    assert first.commit_log_offset == torn.commit_log_offset and first.store_timestamp_ms >= torn_at_ms, (
        f"the record at the torn record's place ({first}) was not appended after the restart")


@pytest.mark.req("STORE-1")
@pytest.mark.needs("pull")
def test_queue_offsets_count_messages_not_bytes(target: Target) -> None:
    """One fixed-size consume-queue unit per message, unit n for queue offset n: whatever the body sizes, the
    offsets of a queue are 0, 1, 2, ... and a pull of one message at offset n returns message n and moves on
    to n + 1."""
    target.create_topic(T, 1)
    sizes = (1, 9_000, 2, 40, 20_000, 3, 500)
    receipts = [target.send(T, 0, body("u", i, size)) for i, size in enumerate(sizes)]
    assert [r.queue_offset for r in receipts] == list(range(len(sizes)))
    visible(target, T, 0, len(sizes))  # Apache RocketMQ builds its consume queue after acknowledging a send
    assert target.min_max(T, 0) == (0, len(sizes))
    for n, size in enumerate(sizes):
        r = target.start_pull("G", T, 0, n, max_nums=1).result()
        assert [(m.queue_offset, m.body) for m in r.messages] == [(n, body("u", n, size))], f"pull at {n}"
        assert r.next_begin_offset == n + 1, f"pull of one message at {n}"


# -- retention ----------------------------------------------------------------------------------------------
@pytest.mark.req("RETAIN-5", "RETAIN-7", "OFFSET-2", "OFFSET-5", "QOFF-13.min-above-zero")
@pytest.mark.needs("pull", "query_offset", "retention_expire", "store_layout")
def test_expiry_keeps_the_segment_being_written_and_raises_the_min_offset(target: ExpiryTarget) -> None:
    segment = segment_bytes(target)
    target.create_topic(T, 1)
    receipts = fill_three_segments(target, T, 0, segment)
    size = len(body(T, 0, min(segment // 8, MAX_BODY_BYTES)))
    n = len(receipts)
    assert target.min_max(T, 0) == (0, n)
    # The segment being written is the one holding the newest message; every one before it expires.
    kept_from = log_offset(receipts[-1]) // segment * segment
    first_kept = next(r.queue_offset for r in receipts if log_offset(r) >= kept_from)
    deleted = target.expire_retention()
    assert deleted >= 2, f"two full commit-log segments of this test's messages were expired, {deleted} deleted"

    lo, hi = target.min_max(T, 0)
    assert hi == n, "the max offset does not move"
    assert 0 < lo <= first_kept, (
        f"the min offset rises past the deleted messages, to no more than the first message still in the commit "
        f"log (offset {first_kept}); got {lo}"
    )
    # RETAIN-5: the messages of the segment being written are all there.
    kept = pull_all(target, T, 0, lo, hi)
    assert [m.queue_offset for m in kept] == list(range(lo, hi))
    for m in kept:
        assert m.body == body(T, m.queue_offset, size), f"offset {m.queue_offset}: body after the expiry"
        assert m.commit_log_offset in (None, receipts[m.queue_offset].commit_log_offset)
    # OFFSET-2 / RETAIN-7: below the min, a pull is corrected to it, and the consumer reads on from there.
    for offset in sorted({0, lo // 2, lo - 1}):
        r = target.start_pull("G", T, 0, offset).result()
        assert (r.code, r.status, r.next_begin_offset) == ("PULL_OFFSET_MOVED", "OFFSET_TOO_SMALL", lo), (
            f"pull at {offset} below the min offset {lo}"
        )
    r = target.start_pull("G", T, 0, lo).result()
    assert r.status == "FOUND" and r.messages[0].queue_offset == lo
    # OFFSET-5: beyond the max of a queue whose min offset is above 0, a pull is corrected to the max.
    for offset in (hi + 1, hi + 1_000):
        r = target.start_pull("G", T, 0, offset).result()
        assert (r.status, r.next_begin_offset) == ("OFFSET_OVERFLOW_BADLY", hi), f"pull at {offset} beyond [{lo}, {hi})"
    # QOFF-13: a group that never committed, on a queue whose min offset is above 0, is not found.
    assert target.query_offset("NEVER", T, 0) == ("QUERY_NOT_FOUND", -1)


@pytest.mark.req("RETAIN-12")
@pytest.mark.needs("pull", "retention_expire", "store_layout")
def test_the_min_offset_rises_to_the_first_message_left_and_never_falls(target: ExpiryTarget) -> None:
    """Upstream's rule (ConsumeQueue.correctMinOffset), split from the test above: exactly the first unit pointing
    into the commit log's kept segment, and no later expiry lowers it."""
    segment = segment_bytes(target)
    target.create_topic(T, 1)
    receipts = fill_three_segments(target, T, 0, segment)
    kept_from = log_offset(receipts[-1]) // segment * segment
    first_kept = next(r.queue_offset for r in receipts if log_offset(r) >= kept_from)
    target.expire_retention()
    lo, hi = target.min_max(T, 0)
    assert lo == first_kept, (
        f"the min offset rises to the first message still in the commit log (offset {first_kept}, at "
        f"commit-log offset {receipts[first_kept].commit_log_offset} >= {kept_from}); got {lo}"
    )
    assert target.expire_retention() == 0, "nothing but the segment being written is left"
    assert target.min_max(T, 0) == (lo, hi)
    more = target.send(T, 0, b"later")
    assert more.queue_offset == hi
    target.expire_retention()
    assert target.min_max(T, 0)[0] >= lo, "the min offset fell"


@pytest.mark.req("RETAIN-12")
@pytest.mark.needs("pull", "retention_expire", "store_layout", "restart")
def test_raised_min_offsets_survive_a_restart(target: RestartableExpiryTarget) -> None:
    """Two queues, the second only written while the first two segments filled: after the expiry each
    queue's min offset is its first message left in the commit log, and a restart keeps it there."""
    segment = segment_bytes(target)
    target.create_topic(T, 2)
    size = min(segment // 8, MAX_BODY_BYTES)
    early = [target.send(T, 1, body("early", i, 10)) for i in range(3)]
    receipts = fill_three_segments(target, T, 0, segment)
    late = target.send(T, 1, body("late", 0, 10))
    kept_from = log_offset(late) // segment * segment
    assert kept_from <= log_offset(receipts[-1]), "the late message is in the segment being written"
    assert all(log_offset(r) < kept_from for r in early), "the early messages are in expired segments"
    target.expire_retention()
    first_kept = next(r.queue_offset for r in receipts if log_offset(r) >= kept_from)
    expected = {0: (first_kept, len(receipts)), 1: (len(early), len(early) + 1)}
    for q, bounds in expected.items():
        assert target.min_max(T, q) == bounds, f"queue {q}: [min, max) after the expiry"
    target.restart()
    for q, (lo, hi) in expected.items():
        assert target.min_max(T, q) == (lo, hi), f"queue {q}: [min, max) after a restart"
        r = target.start_pull("G", T, q, 0).result()
        assert (r.status, r.next_begin_offset) == ("OFFSET_TOO_SMALL", lo), f"queue {q}: pull at 0 after a restart"
    (m,) = target.start_pull("G", T, 1, len(early)).result().messages
    assert m.body == body("late", 0, 10)
    assert pull_all(target, T, 0, first_kept, first_kept + 1)[0].body == body(T, first_kept, size)


@pytest.mark.req("RETAIN-9")
@pytest.mark.needs("pull", "retention_expire", "store_layout")
def test_a_queue_with_every_message_expired_reads_from_its_max(target: ExpiryTarget) -> None:
    """Queue 1 is written only while queue 0 fills the first two segments: after the expiry nothing of queue 1
    is left, so its min offset is its max, pulls below it are moved there, and the next message is read."""
    segment = segment_bytes(target)
    target.create_topic(T, 2)
    early = [target.send(T, 1, body("early", i, 10)) for i in range(3)]
    receipts = fill_three_segments(target, T, 0, segment)
    kept_from = log_offset(receipts[-1]) // segment * segment
    assert all(log_offset(r) < kept_from for r in early), "queue 1's messages are all in expired segments"
    target.expire_retention()
    assert target.min_max(T, 1) == (3, 3), "queue 1: no message left, so [min, max) is empty at its max"
    r = target.start_pull("G", T, 1, 0).result()
    assert (r.status, r.next_begin_offset) == ("OFFSET_TOO_SMALL", 3), "a pull below the min is moved to it"
    late = target.send(T, 1, body("late", 0, 10))
    assert late.queue_offset == 3
    visible(target, T, 1, 4)
    (m,) = target.start_pull("G", T, 1, 3).result().messages
    assert m.body == body("late", 0, 10)


def _removed_units_are_skipped(target: ExpiryTarget, early: list, segment: int, what: str) -> None:
    """Queue 1 holds ``early`` (three small messages) in a segment that queue 0's fill closes; expire, then pull
    queue 1 from its min offset: nothing comes back, and every unit of the deleted segment is skipped at once. Not
    applicable where the broker raised queue 1's min past them (RETAIN-9)."""
    fill_three_segments(target, T, 0, segment)
    target.expire_retention()
    lo, hi = target.min_max(T, 1)
    if lo >= len(early):
        pytest.skip(f"not applicable: the broker raised queue 1's min offset to {lo} once its {len(early)} messages "
                    "were deleted (RETAIN-9), so no pull reaches a unit whose record is gone")
    r = target.start_pull("G", T, 1, lo).result()
    got = [(m.queue_offset, m.body[:24]) for m in r.messages]
    assert not r.messages, f"a pull of {what} returned {got}"
    assert (r.code, r.next_begin_offset) == ("PULL_RETRY_IMMEDIATELY", len(early)), (
        f"pull at {lo} of units whose records are deleted: skip all {len(early)} of the deleted segment")


@pytest.mark.req("OFFSET-7.removed")
@pytest.mark.needs("pull", "retention_expire", "store_layout")
def test_a_pull_of_removed_records_skips_them(target: ExpiryTarget) -> None:
    """Three messages of queue 1 in the first segment a fill of queue 0 closes: after the expiry, a pull of queue 1
    from a unit whose record is gone returns nothing, says so (MESSAGE_WAS_REMOVING, PULL_RETRY_IMMEDIATELY on the
    wire) and moves past every unit of that deleted segment at once."""
    segment = segment_bytes(target)
    target.create_topic(T, 2)
    # Queue 0 first: on a broker just started, queue 1's records must not be the commit log's first (that case is
    # the first-record clause's, and 4.9.7 fails it), so that this clause's verdict does not depend on test order.
    target.send(T, 0, body(T, 0, 10))
    early = [target.send(T, 1, body("early", i, 10)) for i in range(3)]
    _removed_units_are_skipped(target, early, segment, "removed records")


@pytest.mark.req("OFFSET-7.first-record")
@pytest.mark.needs("pull", "retention_expire", "store_layout", "fresh_store")
def test_a_pull_of_the_removed_first_record_of_the_log_skips_it(target: FreshExpiryTarget) -> None:
    """The same, with queue 1's first message the commit log's first record (a broker started on an empty store):
    RocketMQ 4.9.7 looks a deleted offset 0 up in the first remaining segment and answers FOUND with its bytes
    (fixtures/diff/rocketmq-4.9.7-pull-of-removed-first-record.json)."""
    segment = segment_bytes(target)
    target.restart_fresh()
    target.create_topic(T, 2)
    early = [target.send(T, 1, body("early", i, 10)) for i in range(3)]
    if early[0].commit_log_offset != 0:
        pytest.skip(f"not applicable: on an empty store the broker's own records came first (the test's first "
                    f"message is at commit-log offset {early[0].commit_log_offset}, not 0)")
    try:
        _removed_units_are_skipped(target, early, segment, "the commit log's removed first record (another record's)")
    except MalformedAnswer as exc:  # RocketMQ 4.9.7: another record's bytes, cut to the removed record's size
        raise AssertionError(f"a pull of the commit log's removed first record answered bytes that are not its "
                             f"records: {exc}") from None
