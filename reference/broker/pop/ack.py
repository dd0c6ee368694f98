"""AckMessageProcessor and ChangeInvisibleTimeProcessor: acting on a receipt handle (seed 004 §3.3, §4.3).

Theory of operation
-------------------
An ack or a change of invisible time first *resolves* its handle to the pending delivery it names,
and refuses it, changing nothing, unless all of this holds:

* the handle parses (:class:`~.receipt.ReceiptHandle`) and names this broker and a revive queue of it;
* the topic exists and the group is known to the broker's POP side for it;
* the checkpoint the handle's key names is pending: buffered in memory, or read from the revive log
  and not yet revived. A checkpoint that was revived, or finished, or never issued is not;
* the message is one of that checkpoint's and its bit is not yet set (not yet acknowledged).

An accepted ack sets the bit in memory when the checkpoint is buffered, else appends an ACK record
to the revive log, where the revive service reads it (§3.3: "先尝试将 Ack 消息放入内存 Buffer…").

A change of invisible time (ChangeInvisibleTimeProcessor) pops the message again, on paper: it adds a
checkpoint for that one message with pop time *now* and the new invisible time, then acknowledges
the message in its old checkpoint, in that order, so that the message is covered at every instant.
The new checkpoint's handle replaces the old one, which is no longer valid. Invisibility is thus
replaced, not extended: the message becomes visible ``invisible`` ms after the request.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from reference.broker.pop.buffer import PopBufferMergeService
from reference.broker.pop.checkpoint import AckMsg, PopCheckPoint
from reference.broker.pop.config import PopConfig
from reference.broker.pop.keys import CheckpointKey
from reference.broker.pop.order_info import POP_ORDER_REVIVE_QUEUE
from reference.broker.pop.receipt import INVALID_RECEIPT_HANDLE, ReceiptHandle
from reference.broker.pop.revive import PopReviveService
from reference.broker.pop.revive_log import ReviveLog
from reference.clock import Clock
from reference.rules.errors import InvalidRequest, require
from reference.store.names import check_name
from reference.store.store import MessageStore

#: Error code for an ack naming a group the broker has no POP state for.
SUBSCRIPTION_GROUP_NOT_EXIST = "SUBSCRIPTION_GROUP_NOT_EXIST"


@dataclass(frozen=True)
class ResolvedHandle:
    handle: ReceiptHandle
    key: CheckpointKey
    ck: PopCheckPoint
    index: int

    @property
    def msg_id(self) -> str:
        return self.ck.msg_ids[self.index]


class AckMessageProcessor:
    def __init__(
        self,
        store: MessageStore,
        buffer: PopBufferMergeService,
        revive: PopReviveService,
        revive_log: ReviveLog,
        config: PopConfig,
        broker_name: str,
        clock: Clock,
        known_group: Callable[[str, str], bool],
    ) -> None:
        self.store = store
        self.buffer = buffer
        self.revive = revive
        self.revive_log = revive_log
        self.config = config
        self.broker_name = broker_name
        self.clock = clock
        self._known_group = known_group

    # -- resolving -----------------------------------------------------------------------------
    def resolve(self, group: str, topic: str, handle_text: object) -> ResolvedHandle:
        """The pending delivery a handle names; InvalidRequest (nothing changed) otherwise."""
        check_name(group, "consumerGroup")
        check_name(topic, "topic")
        handle = ReceiptHandle.parse(handle_text)
        self.store.queue_nums(topic)  # raises TopicNotFound
        if not self._known_group(group, topic):
            raise InvalidRequest(
                "consumerGroup", f"group {group!r} has no POP consumption of {topic!r} on this broker",
                SUBSCRIPTION_GROUP_NOT_EXIST,
            )

        def invalid(rule: str) -> InvalidRequest:
            return InvalidRequest("receiptHandle", rule, INVALID_RECEIPT_HANDLE)

        if handle.broker_name != self.broker_name:
            raise invalid(f"issued by broker {handle.broker_name!r}, not by this broker {self.broker_name!r}")
        if handle.revive_queue_id == POP_ORDER_REVIVE_QUEUE:
            raise invalid("names a message of an ordered pop, which has no checkpoint (the ordered path serves it)")
        if handle.revive_queue_id >= self.config.revive_queue_num:
            raise invalid(f"revive queue {handle.revive_queue_id} does not exist")
        key = handle.checkpoint_key(group, topic)
        wrapper = self.buffer.find(key)
        if wrapper is not None and wrapper.ck is not None:
            ck, bits = wrapper.ck, wrapper.bits
        else:
            pending = self.revive.find(key, handle.revive_queue_id)
            if pending is None:
                raise invalid(
                    "no pending delivery matches it: it was already revived or acknowledged, or never issued "
                    "for this group and topic"
                )
            ck, bits = pending.ck, pending.bits
        if ck.invisible_time != handle.invisible_time:
            raise invalid("its invisible time does not match the delivery's")
        index = ck.index_of_ack(handle.offset)
        if index < 0:
            raise invalid(f"offset {handle.offset} is not part of the delivery")
        if bits >> index & 1:
            raise invalid("the message was already acknowledged with this handle")
        return ResolvedHandle(handle, key, ck, index)

    # -- acting --------------------------------------------------------------------------------
    def mark_acked(self, resolved: ResolvedHandle) -> None:
        """Set the message's bit: in memory if its checkpoint is buffered, else via the revive log."""
        if self.buffer.add_ack(resolved.key, resolved.index):
            return
        ck = resolved.ck
        ack = AckMsg(
            ck.topic, ck.group, ck.queue_id, ck.start_offset, ck.pop_time, ck.broker_name, resolved.handle.offset
        )
        self.revive_log.append_ack(ack, resolved.handle.revive_queue_id)
        self.revive.catch_up()

    def ack(self, group: str, topic: str, handle_text: object) -> ResolvedHandle:
        resolved = self.resolve(group, topic, handle_text)
        self.mark_acked(resolved)
        return resolved

    def change_invisible_time(
        self, group: str, topic: str, handle_text: object, invisible_time_ms: int
    ) -> tuple[ResolvedHandle, ReceiptHandle]:
        """Make the message visible ``invisible_time_ms`` from now; returns the old and new handle."""
        cfg = self.config
        require(
            isinstance(invisible_time_ms, int)
            and cfg.min_invisible_time_ms <= invisible_time_ms <= cfg.max_invisible_time_ms,
            "invisibleTime", f"must be in [{cfg.min_invisible_time_ms}, {cfg.max_invisible_time_ms}] ms",
        )
        resolved = self.resolve(group, topic, handle_text)
        old, offset = resolved.ck, resolved.handle.offset
        pop_time = self.changed_pop_time(resolved, group)
        ck = PopCheckPoint(
            old.topic, group, old.queue_id, offset, (0,), (resolved.msg_id,), pop_time, invisible_time_ms,
            resolved.handle.revive_queue_id, old.broker_name,
        )
        self.buffer.add_checkpoint(ck, -1, track_offset=False)
        self.mark_acked(resolved)
        new = ReceiptHandle(
            offset, pop_time, invisible_time_ms, ck.revive_queue_id, resolved.handle.retry, old.broker_name,
            old.queue_id, offset,
        )
        return resolved, new

    def changed_pop_time(self, resolved: ResolvedHandle, group: str) -> int:
        """The pop time of the checkpoint a change of invisible time makes: now, or the next free millisecond.

        The new checkpoint starts at the message's offset, so a change of a checkpoint's first message within
        its pop's millisecond (or two changes of one message within one) would have the same key as a pending
        checkpoint, and the revive service would keep only one of them (PACK-9; RocketMQ 5.5 loses both)."""
        old, offset = resolved.ck, resolved.handle.offset
        pop_time = self.clock.now_ms()
        while self._pending(CheckpointKey(old.topic, group, old.queue_id, offset, pop_time, old.broker_name),
                            resolved.handle.revive_queue_id):
            pop_time += 1
        return pop_time

    def _pending(self, key: CheckpointKey, revive_queue_id: int) -> bool:
        """Whether a checkpoint with exactly ``key`` is pending (buffered or in the revive log)."""
        wrapper = self.buffer.find(key)
        if wrapper is not None and wrapper.ck is not None and wrapper.ck.key == key:
            return True
        pending = self.revive.find(key, revive_queue_id)
        return pending is not None and pending.ck.key == key
