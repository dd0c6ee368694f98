"""The reference's ordered POP and topic deletion below the Target interface: the order info table, the ordered
ack's refusals, the remoting front's orderCountInfo, and a deleted topic's checkpoint in the revive log."""

from __future__ import annotations

import pytest

from reference.broker.broker import Broker
from reference.broker.pop.order_info import NOT_IN_BATCH, STALE_POP_TIME, ConsumerOrderInfoManager
from reference.broker.pop.protocol import PopMessageRequest, PopResponse, RecordingPopChannel
from reference.broker.pop.receipt import INVALID_RECEIPT_HANDLE, ReceiptHandle
from reference.net.remoting.pop_handlers import order_count_info
from reference.rules.errors import InvalidRequest
from reference.store.message import Message
from tests.pop.test_pop_broker import G, T, pop_broker


def ordered(broker: Broker, max_nums: int = 32, invisible: int = 5_000) -> PopResponse:
    response = broker.pop(PopMessageRequest(G, T, -1, max_nums, invisible, 0, order=True), RecordingPopChannel("c"))
    assert response is not None, "a pop with poll time 0 is answered at once"
    return response


@pytest.mark.req("POP-14.count", "POP-14.ack")
def test_order_info_counts_redeliveries_and_commits_past_a_done_batch() -> None:
    info = ConsumerOrderInfoManager()
    assert info.update(T, G, 0, 1_000, 5_000, [0, 1]) == {0: 0, 1: 0}
    assert info.check_block(T, G, 0, 5_999) and not info.check_block(T, G, 0, 6_000)
    assert info.update(T, G, 0, 7_000, 5_000, [0, 1, 2]) == {0: 1, 1: 1, 2: 0}, "only redelivered offsets count up"
    assert info.commit_and_next(T, G, 0, 1, 1_000) == STALE_POP_TIME, "a handle of the earlier batch"
    assert info.commit_and_next(T, G, 0, 5, 7_000) == NOT_IN_BATCH
    assert info.commit_and_next(T, G, 0, 1, 7_000) == 0, "the first message not done is where the queue stays"
    assert info.commit_and_next(T, G, 0, 0, 7_000) == 2
    assert info.commit_and_next(T, G, 0, 2, 7_000) == 3, "all done: past the batch"
    assert not info.check_block(T, G, 0, 7_001), "a batch acknowledged in full blocks nothing"


@pytest.mark.req("POP-13.no-retry", "POP-13.again")
def test_an_ordered_pop_leaves_no_checkpoint_and_commits_the_batch_start() -> None:
    with pop_broker(queues=1) as (broker, clock, _sink):
        for i in range(3):
            broker.send(Message(T, b"%d" % i, 0, tags="A"))
        response = ordered(broker, max_nums=2)
        assert [m.queue_offset for m in response.messages] == [0, 1]
        assert response.revive_queue_id == 999, "KeyBuilder.POP_ORDER_REVIVE_QUEUE"
        assert broker.pop_service.revive.pending_count() == 0, "no checkpoint reaches the revive log"
        assert broker.offsets.query_offset(G, T, 0) == 0, "committed at the batch's start"
        clock.advance(60_000)
        assert broker.store.topics().get(f"%RETRY%{G}_{T}") is None, "nothing was revived"


@pytest.mark.req("POP-14.ack")
def test_an_ordered_ack_is_refused_when_stale_or_repeated_and_changes_nothing() -> None:
    with pop_broker(queues=1) as (broker, clock, _sink):
        for i in range(2):
            broker.send(Message(T, b"%d" % i, 0, tags="A"))
        first = ordered(broker, max_nums=1, invisible=1_000)
        clock.advance(1_001)
        second = ordered(broker, max_nums=1, invisible=1_000)
        assert [m.queue_offset for m in second.messages] == [0]
        with pytest.raises(InvalidRequest) as stale:
            broker.ack(G, T, first.messages[0].handle)
        assert stale.value.code == INVALID_RECEIPT_HANDLE and stale.value.field == "receiptHandle"
        broker.ack(G, T, second.messages[0].handle)
        assert broker.offsets.query_offset(G, T, 0) == 1
        with pytest.raises(InvalidRequest, match="already acknowledged"):
            broker.ack(G, T, second.messages[0].handle)
        assert broker.offsets.query_offset(G, T, 0) == 1


@pytest.mark.req("POP-13.count")
def test_the_remoting_front_writes_order_count_info_as_rocketmq_5() -> None:
    text = order_count_info({(False, 0, 4): 1, (False, 0, 5): 0, (True, 0, 2): 3})
    assert text == "0 qo0%4 1;0 qo0%5 0;1 qo0%2 3;0 0 0;1 0 3"


@pytest.mark.req("REVIVE-8")
def test_a_deleted_topics_checkpoint_is_dropped_by_the_revive_service() -> None:
    with pop_broker(queues=1) as (broker, clock, _sink):
        broker.send(Message(T, b"x", 0, tags="A"))
        popped = broker.pop(PopMessageRequest(G, T, -1, 32, 5_000, 0), RecordingPopChannel("c"))
        assert popped is not None and len(popped.messages) == 1
        broker.delete_topic(T)
        broker.delete_topic(T)  # deleting a missing topic is no error, as in RocketMQ
        assert T not in broker.store.topics()
        clock.advance(60_000)
        assert broker.pop_service.revive.pending_count() == 0, "the revive service moved past the checkpoint"
        assert broker.store.topics().get(f"%RETRY%{G}_{T}") is None, "nothing was revived"


@pytest.mark.req("POP-14.ack")
def test_a_held_ordered_pop_is_answered_when_the_batch_blocking_its_queue_is_acknowledged() -> None:
    with pop_broker(queues=1) as (broker, clock, _sink):
        for i in range(2):
            broker.send(Message(T, b"%d" % i, 0, tags="A"))
        first = ordered(broker, max_nums=1, invisible=60_000)
        channel = RecordingPopChannel("held")
        held = broker.pop(PopMessageRequest(G, T, -1, 32, 60_000, 30_000, order=True), channel)
        assert held is None, "a blocked queue gives nothing: the pop is held"
        broker.ack(G, T, first.messages[0].handle)
        assert [[m.queue_offset for m in r.messages] for _, r in channel.pop_responses] == [[1]]


@pytest.mark.req("POP-14.ack")
def test_a_change_of_invisible_time_keeps_an_ordered_message_in_its_batch_and_its_queue_blocked() -> None:
    """Upstream processChangeInvisibleTimeForOrder: the message gets no checkpoint; the queue stays blocked until
    the new time, the new handle keeps the pop time and acknowledges; a handle of an earlier batch is refused."""
    with pop_broker(queues=1) as (broker, clock, _sink):
        for i in range(2):
            broker.send(Message(T, b"%d" % i, 0, tags="A"))
        first = ordered(broker, max_nums=1, invisible=1_000)
        old = first.messages[0].handle
        changed = broker.change_invisible_time(G, T, old, 10_000)
        new = ReceiptHandle.parse(changed.handle)
        assert new.pop_time == ReceiptHandle.parse(old).pop_time and new.revive_queue_id == 999
        assert broker.pop_service.revive.pending_count() == 0, "an ordered message never gets a checkpoint"
        clock.advance(5_000)
        assert ordered(broker).messages == (), "the queue stays blocked past the batch's own invisible time"
        broker.ack(G, T, changed.handle)
        assert [m.queue_offset for m in ordered(broker).messages] == [1], "acknowledged: the queue goes on"
        with pytest.raises(InvalidRequest) as refused:
            broker.change_invisible_time(G, T, old, 10_000)
        assert refused.value.field == "receiptHandle" and refused.value.code == INVALID_RECEIPT_HANDLE
