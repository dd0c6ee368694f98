"""The ack of an ordered pop's message (seed 004 lines 714-716: "顺序消息 ACK", revive queue 999).

An ordered batch has no checkpoint (:mod:`.order_info`): its handle's revive queue id is
:data:`~.order_info.POP_ORDER_REVIVE_QUEUE`, and its ack marks the message done in the queue's order
info and commits the offset that gives (the first message not done, or past the batch), which frees
the queue once the whole batch is done. The seed elides the body; commitAndNext and the commit are
upstream AckMessageProcessor.ackOrderly's (rocketmq-all-5.3.3). A handle of an earlier batch (the
queue was popped again since), an offset outside the batch or a second ack of a message is refused
with INVALID_RECEIPT_HANDLE and changes nothing, as the reference refuses stale handles (PACK-8). A change of
invisible time of such a message keeps it in its batch and its queue blocked longer (upstream
processChangeInvisibleTimeForOrder); it is refused alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from reference.broker.pop.ack import SUBSCRIPTION_GROUP_NOT_EXIST, ResolvedHandle
from reference.broker.pop.checkpoint import PopCheckPoint
from reference.broker.pop.order_info import POP_ORDER_REVIVE_QUEUE, STALE_POP_TIME, ConsumerOrderInfoManager
from reference.broker.pop.receipt import INVALID_RECEIPT_HANDLE, ReceiptHandle
from reference.rules.errors import InvalidRequest
from reference.rules.topics import pop_retry_topic
from reference.store.message import StoredMessage
from reference.store.names import check_name
from reference.store.store import MessageStore

#: (group, topic, queue_id, offset): commit a consume offset.
Committer = Callable[[str, str, int, int], None]


def is_ordered_handle(text: object) -> bool:
    """Whether ``text`` is a well-formed handle of an ordered pop (its revive queue id is 999)."""
    try:
        return ReceiptHandle.parse(text).revive_queue_id == POP_ORDER_REVIVE_QUEUE
    except InvalidRequest:
        return False


class OrderAckProcessor:
    def __init__(
        self,
        store: MessageStore,
        order_info: ConsumerOrderInfoManager,
        broker_name: str,
        commit: Committer,
        known_group: Callable[[str, str], bool],
    ) -> None:
        self.store = store
        self.order_info = order_info
        self.broker_name = broker_name
        self._commit = commit
        self._known_group = known_group

    def resolve(self, group: str, topic: str, handle_text: object) -> tuple[ReceiptHandle, str, StoredMessage]:
        """The handle, the topic its queue is of (the retry topic for a retried message) and the message it
        names; refused when the group, the broker or the message is not this one's, or it is already done."""
        check_name(group, "consumerGroup")
        check_name(topic, "topic")
        handle = ReceiptHandle.parse(handle_text)
        self.store.queue_nums(topic)  # raises TopicNotFound
        if not self._known_group(group, topic):
            raise InvalidRequest(
                "consumerGroup", f"group {group!r} has no POP consumption of {topic!r} on this broker",
                SUBSCRIPTION_GROUP_NOT_EXIST,
            )
        if handle.broker_name != self.broker_name:
            raise _invalid(f"issued by broker {handle.broker_name!r}, not by this broker {self.broker_name!r}")
        ck_topic = pop_retry_topic(group, topic) if handle.retry else topic
        if self.order_info.is_done(ck_topic, group, handle.queue_id, handle.offset, handle.pop_time):
            raise _invalid("the message was already acknowledged with this handle")
        found = self.store.get_message(group, ck_topic, handle.queue_id, handle.offset, 1, None).messages
        if not found:
            raise _invalid(f"offset {handle.offset} holds no message of queue {handle.queue_id}")
        return handle, ck_topic, found[0]

    def ack(self, group: str, topic: str, handle_text: object) -> ResolvedHandle:
        handle, ck_topic, message = self.resolve(group, topic, handle_text)
        queue_id, offset = handle.queue_id, handle.offset
        following = self.order_info.commit_and_next(ck_topic, group, queue_id, offset, handle.pop_time)
        _check_batch(following, offset)
        self._commit(group, ck_topic, queue_id, following)
        return self._resolved(handle, ck_topic, group, message)

    def change_invisible(
        self, group: str, topic: str, handle_text: object, invisible_time_ms: int, now_ms: int
    ) -> tuple[ResolvedHandle, ReceiptHandle]:
        """Upstream ChangeInvisibleTimeProcessor.processChangeInvisibleTimeForOrder: the message stays in its
        batch (no checkpoint, no revive) and is invisible until ``now_ms + invisible_time_ms``, which keeps its
        queue blocked that long; the new handle keeps the pop time, its invisible time reaching that instant."""
        handle, ck_topic, message = self.resolve(group, topic, handle_text)
        next_visible = now_ms + invisible_time_ms
        changed = self.order_info.update_next_visible(ck_topic, group, handle.queue_id, handle.offset,
                                                      handle.pop_time, next_visible)
        _check_batch(changed, handle.offset)
        new = replace(handle, invisible_time=next_visible - handle.pop_time)
        return self._resolved(handle, ck_topic, group, message), new

    def _resolved(self, handle: ReceiptHandle, ck_topic: str, group: str, message: StoredMessage) -> ResolvedHandle:
        ck = PopCheckPoint(
            ck_topic, group, handle.queue_id, handle.start_offset, (handle.offset - handle.start_offset,),
            (message.unique_id,), handle.pop_time, handle.invisible_time, POP_ORDER_REVIVE_QUEUE, self.broker_name,
        )
        return ResolvedHandle(handle, ck.key, ck, 0)


def _invalid(rule: str) -> InvalidRequest:
    return InvalidRequest("receiptHandle", rule, INVALID_RECEIPT_HANDLE)


def _check_batch(answer: int, offset: int) -> None:
    """commitAndNext's or updateNextVisibleTime's answer: refused when it changed nothing."""
    if answer == STALE_POP_TIME:
        raise _invalid("the queue was popped again since this handle was issued")
    if answer < 0:
        raise _invalid(f"offset {offset} is not part of the queue's ordered batch in flight")
