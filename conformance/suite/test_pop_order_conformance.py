"""Seed 004's ordered POP (POP-13, POP-14), the retry topic's one-in-five read (POP-3), the pop offset past unmatched
units (POP-15) and the revive's topic check (REVIVE-8), through the Target interface.

An ordered pop (RocketMQ's PopMessageRequestHeader.order) keeps one batch in flight per queue and group: the
queue is blocked while the batch is unacknowledged and invisible, and the batch comes back from the queue itself
(its consume offset was committed at the batch's start), never through a revive. On simulated time the tests move
the clock past an invisibility; over the wire they wait for it (a few seconds each).

REVIVE-8: a checkpoint whose topic was deleted before it was due revives nothing. A second topic popped by the same
group at the same time and kept is revived: it shows that the revive service ran over both.
"""

from __future__ import annotations

import time

import pytest

from conformance.suite.support import answered
from conformance.suite.test_pop_conformance import (
    REVIVE_DELAY_MS,
    clocked,
    quiet,
    send_n,
    wait_for_redelivery,
)
from conformance.targets import OrderedPopTarget, PopReply, PopTarget, Target, TopicAdminTarget


class DeletingPopTarget(PopTarget, TopicAdminTarget):
    """A target with pop and topic deletion."""


pytestmark = pytest.mark.needs("pop")
#: The invisible time of an ordered batch: short, since the tests wait for it to end over the wire.
ORDER_INVISIBLE_MS = 3_000
#: POP-3: messages revived into the retry topic, fresh messages behind them, and one-message pops that count how often
#: the retry topic is read first. With p = 1/5 and 50 pops, none from the retry topic has probability 0.8^50 (1e-5) and
#: 25 or more about 1e-5: a broker that never reads it first, or always, is told from one that does one pop in five.
RETRY_REVIVED, RETRY_FRESH, RETRY_POPS = 32, 60, 50
RETRY_FIRST_BOUNDS = (1, 24)
#: Two-message pops tried until one reads the topic first and shows the fill (all five retry-first: 1 in 3125).
RETRY_FILL_ATTEMPTS = 5
#: Over the wire: how long past an invisibility the tests wait before popping again (the broker's clock and the
#: answer's latency).
WIRE_PAST_MS = 500


def pop_orderly_now(target: OrderedPopTarget, topic: str, group: str, max_nums: int = 32,
                    invisible_ms: int = ORDER_INVISIBLE_MS) -> PopReply:
    pending = target.pop_orderly(group, topic, -1, max_nums, invisible_ms, 0)
    assert answered(target, pending), "an ordered pop with poll time 0 must be answered at once"
    return pending.result()


def past_invisibility(target: Target, invisible_ms: int) -> None:
    """Let an ordered batch's invisibility end (simulated time: exactly past it)."""
    target.advance(invisible_ms + (1 if clocked(target) else WIRE_PAST_MS))


def offsets(reply: PopReply) -> list[int]:
    return [m.queue_offset for m in reply.messages]


def unseen(target: Target, what: str) -> bool:
    """Whether the target's wire cannot show ``what`` of a pop answer (``rest_num``, ``order_count_info``): RocketMQ
    5's ReceiveMessage has neither (the grpc:// target's ``unseen``)."""
    return what in getattr(target, "unseen", frozenset())


def consume_counts(target: Target, reply: PopReply) -> list[int]:
    """The consume count of each message of an ordered batch of queue 0: its queue's orderCountInfo entry, or, on a
    wire without orderCountInfo (RocketMQ 5 gRPC), the message's own count (its delivery_attempt - 1: the proxy
    puts the orderCountInfo count there, MQClientAPIImpl.processPopResponse)."""
    if unseen(target, "order_count_info"):
        return [m.reconsume_times for m in reply.messages]
    assert (False, 0) in reply.order_counts, f"no orderCountInfo for queue 0: {reply.order_counts}"
    return [reply.order_counts[(False, 0)]] * len(reply.messages)


@pytest.mark.req("POP-13.count")
@pytest.mark.needs("pop_order")
def test_an_ordered_pop_answers_order_count_info_for_the_queue_it_read(target: OrderedPopTarget) -> None:
    """Seed 004 lines 496-498, 599: the answer of an ordered pop that found messages carries orderCountInfo."""
    if unseen(target, "order_count_info"):
        pytest.skip("not applicable: the target's wire carries no orderCountInfo (a RocketMQ 5 ReceiveMessage shows "
                    "each message's delivery_attempt only)")
    topic, group = "PopOrdCntT", "PopOrdCntG"
    target.create_topic(topic, 1)
    send_n(target, 0, 1, topic=topic)
    first = pop_orderly_now(target, topic, group)
    assert offsets(first) == [0]
    assert first.order_counts.get((False, 0)) == 0, f"POP-13.count: no orderCountInfo for queue 0: {first.order_counts}"


@pytest.mark.req("POP-13.blocked", "POP-13.again", "POP-14.count")
@pytest.mark.needs("pop_order")
def test_an_ordered_batch_blocks_its_queue_until_its_invisibility_ends(target: OrderedPopTarget) -> None:
    """Seed 004 lines 545-549 and 592-599: an ordered pop of 2 of 3 messages blocks the queue (the next ordered
    pop gets nothing, not even the third message); after the invisibility the same two come back in order, from
    the queue itself, with their count one higher."""
    topic, group = "PopOrdT", "PopOrdG"
    target.create_topic(topic, 1)
    send_n(target, 0, 3, topic=topic)
    first = pop_orderly_now(target, topic, group, max_nums=2)
    assert offsets(first) == [0, 1], f"an ordered pop reads the queue in order: {offsets(first)}"
    assert consume_counts(target, first) == [0, 0], f"POP-14.count: a first delivery counts 0: {first}"
    blocked = pop_orderly_now(target, topic, group)
    assert blocked.messages == (), (
        f"POP-13.blocked: the queue's batch is in flight, yet an ordered pop got offsets {offsets(blocked)}"
    )
    past_invisibility(target, ORDER_INVISIBLE_MS)
    again = pop_orderly_now(target, topic, group, max_nums=2)
    assert offsets(again) == [0, 1], f"POP-13.again: the unacknowledged batch must come back in order: {offsets(again)}"
    assert not any(m.retry for m in again.messages), "POP-13.again: an ordered batch comes back from its queue"
    assert consume_counts(target, again) == [1, 1], f"POP-14.count: a second delivery counts 1: {again}"


@pytest.mark.req("POP-13.rest-num")
@pytest.mark.needs("pop_order")
def test_a_blocked_queue_counts_its_backlog_in_rest_num(target: OrderedPopTarget) -> None:
    """Seed 004 line 548: a queue skipped because its ordered batch is in flight adds max offset - pop offset to
    restNum."""
    if unseen(target, "rest_num"):
        pytest.skip("not applicable: the target's wire carries no restNum (a RocketMQ 5 ReceiveMessage has none)")
    topic, group = "PopOrdRestT", "PopOrdRestG"
    target.create_topic(topic, 1)
    send_n(target, 0, 3, topic=topic)
    first = pop_orderly_now(target, topic, group, max_nums=1)
    assert offsets(first) == [0]
    blocked = pop_orderly_now(target, topic, group)
    assert blocked.messages == ()
    assert blocked.rest_num == 3, f"restNum of the blocked queue: {blocked.rest_num} (max offset 3, pop offset 0)"


@pytest.mark.req("POP-14.ack")
@pytest.mark.needs("pop_order")
def test_acknowledging_an_ordered_batch_frees_its_queue(target: OrderedPopTarget) -> None:
    """Upstream ackOrderly / commitAndNext: once every message of the batch is acknowledged, the next ordered pop
    gets the following messages at once, long before the batch's invisibility ends."""
    topic, group = "PopOrdAckT", "PopOrdAckG"
    target.create_topic(topic, 1)
    send_n(target, 0, 4, topic=topic)
    first = pop_orderly_now(target, topic, group, max_nums=2, invisible_ms=60_000)
    assert offsets(first) == [0, 1]
    for m in first.messages:
        target.ack(group, topic, m.handle)
    nxt = pop_orderly_now(target, topic, group, max_nums=2, invisible_ms=60_000)
    assert offsets(nxt) == [2, 3], f"after the batch was acknowledged the queue goes on: {offsets(nxt)}"


@pytest.mark.req("POP-13.no-retry")
@pytest.mark.needs("pop_order")
def test_an_ordered_pop_reads_no_retry_topic(target: OrderedPopTarget) -> None:
    """Seed 004 lines 428 and 457: the retry topic is read only by unordered pops. A message revived into
    %RETRY%{group}_{topic} is never returned to an ordered pop of the group, and an unordered pop then gets it."""
    topic, group = "PopOrdRetryT", "PopOrdRetryG"
    target.create_topic(topic, 1)
    send_n(target, 0, 1, topic=topic)
    pending = target.pop(group, topic, -1, 32, 1_000, 0)
    assert answered(target, pending)
    assert len(pending.result().messages) == 1
    quiet(target, 1_000 + REVIVE_DELAY_MS + 1_000)  # revived by now (over the wire: plus the revive slack)
    for _ in range(5):  # an unordered pop would read the retry topic in one pop of five at least first
        ordered = pop_orderly_now(target, topic, group)
        assert not any(m.retry for m in ordered.messages), "POP-13.no-retry: an ordered pop read the retry topic"
    _, got = wait_for_redelivery(target, 5_000, group=group, topic=topic)
    assert [m.retry for m in got] == [True], f"the revived message must be in the retry topic: {got}"


@pytest.mark.req("POP-3")
def test_the_retry_topic_is_read_first_one_pop_in_five_and_fills_a_short_batch(target: PopTarget) -> None:
    """Seed 004 lines 168-171, 424-439, 455-468: with messages in both, a one-message pop takes the retry topic's
    when its random number divides by 5 (one pop in five), else the topic's; a batch the topic leaves short is
    filled from the retry topic."""
    topic, group = "PopRetryFirstT", "PopRetryFirstG"
    target.create_topic(topic, 1)
    send_n(target, 0, RETRY_REVIVED, topic=topic)
    pending = target.pop(group, topic, -1, RETRY_REVIVED, 1_000, 0)
    assert answered(target, pending)
    assert len(pending.result().messages) == RETRY_REVIVED
    quiet(target, 1_000 + REVIVE_DELAY_MS + 1_000)  # every one revived into %RETRY%{group}_{topic} by now
    judged = False
    # One fresh message for all attempts: a pop that reads the retry topic first (one in five) fills its batch of
    # two from it and leaves the fresh one, which a second would double (the next pop then reads [F, F]).
    send_n(target, 0, 1, topic=topic, tag="F")
    for _ in range(RETRY_FILL_ATTEMPTS):  # a pop that reads the retry topic first (one in five) cannot show the fill
        pending = target.pop(group, topic, -1, 2, 60_000, 0)
        assert answered(target, pending)
        filled = pending.result().messages
        for m in filled:
            target.ack(group, topic, m.handle)
        if filled and not filled[0].retry:
            assert [m.retry for m in filled] == [False, True], (
                f"a short batch is filled from the retry topic: retry flags {[m.retry for m in filled]}"
            )
            judged = True
            break
    assert judged, f"{RETRY_FILL_ATTEMPTS} two-message pops in a row all read the retry topic first"
    send_n(target, 0, RETRY_FRESH, topic=topic, tag="F")
    retry_first = 0
    for _ in range(RETRY_POPS):
        pending = target.pop(group, topic, -1, 1, 60_000, 0)
        assert answered(target, pending)
        got = pending.result().messages
        assert len(got) == 1, "with fresh messages behind, a one-message pop always gets one"
        retry_first += got[0].retry
    low, high = RETRY_FIRST_BOUNDS
    assert low <= retry_first <= high, (
        f"{retry_first} of {RETRY_POPS} one-message pops took the retry topic's message first; one in five would "
        f"give about {RETRY_POPS // 5}"
    )


@pytest.mark.req("POP-15")
def test_a_pop_that_matches_nothing_moves_the_pop_offset_past_the_units_it_read(target: PopTarget) -> None:
    """Seed 004 lines 607-617: units the pop's filter matches none of are passed over (addCkMock): the group's next
    pop, with any filter, starts after them; a message sent afterwards is the only one it gets."""
    topic, group = "PopNoMatchT", "PopNoMatchG"
    target.create_topic(topic, 1)
    send_n(target, 0, 3, topic=topic, tag="B")
    pending = target.pop(group, topic, -1, 32, 60_000, 0, expression="A")
    assert answered(target, pending)
    assert pending.result().messages == (), "a filter on A matches none of the B messages"
    send_n(target, 0, 1, topic=topic, tag="C")
    pending = target.pop(group, topic, -1, 32, 60_000, 0, expression="*")
    assert answered(target, pending)
    got = offsets(pending.result())
    assert got == [3], f"the pop offset must have moved past the 3 unmatched units; a '*' pop got offsets {got}"


@pytest.mark.req("REVIVE-8")
@pytest.mark.needs("topic_admin")
def test_a_checkpoint_of_a_deleted_topic_revives_nothing(target: DeletingPopTarget) -> None:
    """Seed 004 lines 1103-1110: the revive service skips a checkpoint whose normal topic no longer exists. The
    group pops a message of each of two topics without acknowledging either, and the first topic is deleted: the
    second's message comes back, the first's never does, not even once its topic exists again."""
    gone, kept, group = "PopGoneT", "PopKeptT", "PopGoneG"
    invisible = 2_000
    for topic in (gone, kept):
        target.create_topic(topic, 1)
        send_n(target, 0, 1, topic=topic)
        pending = target.pop(group, topic, -1, 32, invisible, 0)
        assert answered(target, pending)
        assert len(pending.result().messages) == 1, f"the first pop of {topic} gets its message"
    target.delete_topic(gone)
    started = time.monotonic()
    _, revived = wait_for_redelivery(target, invisible + REVIVE_DELAY_MS + 1_000, group=group, topic=kept)
    assert [m.retry for m in revived] == [True], f"the kept topic's message must be revived: {revived}"
    if not clocked(target):  # the gone topic's checkpoint may sit in another revive queue: give it as long again
        target.advance(int((time.monotonic() - started) * 1000))
    target.create_topic(gone, 1)
    for _ in range(5):  # one pop in five reads the retry topic first; any pop reads it when the topic is empty
        pending = target.pop(group, gone, -1, 32, 60_000, 0)
        assert answered(target, pending)
        got = pending.result().messages
        assert got == (), f"REVIVE-8: a checkpoint of the deleted topic was revived: {[m.body for m in got]}"
