"""The revive log: checkpoints and acks persisted in a store topic (seed 004 §3.2.3, §3.3, §3.4.2).

RocketMQ writes a checkpoint that leaves memory, and an ack that found no checkpoint in memory, as
messages of the topic ``rmq_sys_REVIVE_LOG_{cluster}`` (tags ``ck`` / ``ack``), in the revive queue
the pop chose. Being store messages they survive a broker restart, which is what makes POP
restart-safe: the revive service reads them back from its committed position.

RocketMQ also delays these messages (timer messages, delivered one second before the revive time)
so that a checkpoint is read just before it is due. The reference has no timer store: records are
readable at once, and the revive service keeps pending checkpoints until they are due. Order still
matters and holds here: a checkpoint's record always precedes the ack records that name it, because
an ack is written to the log only when its checkpoint is no longer in memory, that is, after the
checkpoint was written.
"""

from __future__ import annotations

from dataclasses import dataclass

from reference.broker.pop.checkpoint import (
    AckMsg,
    PopCheckPoint,
    decode_ack,
    decode_checkpoint,
    encode_ack,
    encode_checkpoint,
)
from reference.broker.pop.config import PopConfig
from reference.broker.pop.keys import ACK_TAG, CK_TAG, REVIVE_GROUP, revive_topic
from reference.rules.status import GetMessageStatus
from reference.store.message import Message
from reference.store.store import MessageStore

#: Records read per store call (consumeReviveMessage reads 32 at a time).
READ_BATCH = 32


@dataclass(frozen=True)
class ReviveRecord:
    """One record of the log: at ``offset`` of its revive queue, a checkpoint or an ack."""

    offset: int
    checkpoint: PopCheckPoint | None = None
    acked_bits: int = 0
    ack: AckMsg | None = None


class ReviveLog:
    def __init__(self, store: MessageStore, config: PopConfig) -> None:
        self.store = store
        self.config = config
        self.topic = revive_topic(config.cluster_name)
        self._created = store.topics().get(self.topic) == config.revive_queue_num

    def exists(self) -> bool:
        return self.topic in self.store.topics()

    def _ensure_topic(self) -> None:
        if not self._created:
            self.store.create_topic(self.topic, self.config.revive_queue_num)
            self._created = True

    def append_checkpoint(self, ck: PopCheckPoint, acked_bits: int) -> int:
        """Write a checkpoint with the acks it gathered so far; returns its offset in the queue."""
        self._ensure_topic()
        result = self.store.put_message(
            Message(self.topic, encode_checkpoint(ck, acked_bits), ck.revive_queue_id, tags=CK_TAG)
        )
        return result.queue_offset

    def append_ack(self, ack: AckMsg, revive_queue_id: int) -> int:
        self._ensure_topic()
        result = self.store.put_message(Message(self.topic, encode_ack(ack), revive_queue_id, tags=ACK_TAG))
        return result.queue_offset

    def max_offset(self, revive_queue_id: int) -> int:
        return self.store.get_max_offset_in_queue(self.topic, revive_queue_id)

    def min_offset(self, revive_queue_id: int) -> int:
        return self.store.get_min_offset_in_queue(self.topic, revive_queue_id)

    def read(self, revive_queue_id: int, offset: int) -> tuple[list[ReviveRecord], int]:
        """Every record from ``offset`` to the end of the queue, and the offset after the last one.

        An offset below the queue's min (retention) moves up to the min; records that are neither a
        checkpoint nor an ack are skipped.
        """
        records: list[ReviveRecord] = []
        if not self.exists():
            return records, offset
        while True:
            result = self.store.get_message(REVIVE_GROUP, self.topic, revive_queue_id, offset, READ_BATCH, None)
            for msg in result.messages:
                if msg.tags == CK_TAG:
                    decoded = decode_checkpoint(msg.body)
                    if decoded is not None:
                        records.append(ReviveRecord(msg.queue_offset, decoded[0], decoded[1]))
                elif msg.tags == ACK_TAG:
                    ack = decode_ack(msg.body)
                    if ack is not None:
                        records.append(ReviveRecord(msg.queue_offset, ack=ack))
            if result.status in (GetMessageStatus.NO_MESSAGE_IN_QUEUE, GetMessageStatus.OFFSET_OVERFLOW_ONE):
                return records, offset
            if result.next_begin_offset == offset:  # nothing readable moved us on
                return records, offset
            offset = result.next_begin_offset
