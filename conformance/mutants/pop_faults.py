"""Seeded faults of POP consumption and permit flow control (issue 5). Each overrides one method.

* :class:`ReviveIgnoresLateAcks` – RocketMQ #7724 ("acked messages popped again"): the revive
  service matches only the acks a checkpoint gathered in memory, not the ACK records written to the
  revive log after the checkpoint left memory.
* :class:`AckKeyWithoutPopTime` – checkpoints are matched with acks by topic, group, queue and start
  offset only: two checkpoints of one start offset (a change of invisible time) collide.
* :class:`ChangeKeepsTheInstant` – a change of invisible time stamps its checkpoint with the change's
  instant even when a pending checkpoint has that key (RocketMQ 5.5's ChangeInvisibleTimeProcessor): a change
  of a checkpoint's first message within the pop's millisecond replaces the original checkpoint.
* :class:`InvisibleFromRequest` – invisibility counts from when the pop request arrived, not from
  when its batch was read: a pop held by long polling hands out messages that become visible early.
* :class:`BatchCountsAsOnePermit` – the dispatcher charges one permit per batch entry.
* :class:`PermitsGoNegative` – the single-active dispatcher reads for its consumer while its permits are
  not below 0 (``>= 0`` for Pulsar's ``> 0``): a consumer with no permit left is sent one more read, so its
  permits go negative without a batch to excuse it (seed 003's ``readMoreEntries`` guard, off by one).
"""

from __future__ import annotations

from collections.abc import Hashable

from reference.broker.permits.cursor import EntryRead
from reference.broker.permits.dispatcher import SingleActiveConsumerDispatcher
from reference.broker.pop.ack import AckMessageProcessor, ResolvedHandle
from reference.broker.pop.buffer import PopBufferMergeService
from reference.broker.pop.checkpoint import AckMsg
from reference.broker.pop.keys import CheckpointKey
from reference.broker.pop.processor import PopMessageProcessor
from reference.broker.pop.revive import PopReviveService


class ReviveIgnoresLateAcks(PopReviveService):
    def apply_ack(self, qid: int, ack: AckMsg) -> None:
        pass


class AckKeyWithoutPopTime(PopBufferMergeService):
    def merge_key(self, key: CheckpointKey) -> Hashable:
        return (key.topic, key.group, key.queue_id, key.start_offset, key.broker_name)


class ChangeKeepsTheInstant(AckMessageProcessor):
    def changed_pop_time(self, resolved: ResolvedHandle, group: str) -> int:
        return self.clock.now_ms()


class InvisibleFromRequest(PopMessageProcessor):
    def pop_time(self, born_time: int) -> int:
        return born_time


class BatchCountsAsOnePermit(SingleActiveConsumerDispatcher):
    def permits_for(self, read: EntryRead) -> int:
        return 1


class PermitsGoNegative(SingleActiveConsumerDispatcher):
    def dispatch_round(self) -> None:
        while True:
            consumer = self.active
            if consumer is None or consumer.permits < 0:
                return
            reads = self.cursor.read_new(max(consumer.permits, 1))
            if not reads:
                return
            self.send(consumer, reads)
