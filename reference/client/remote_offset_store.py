"""RemoteBrokerOffsetStore: a clustering group's progress, kept on the broker.

``update_offset`` only changes the client's table; the broker hears of it when the table is
persisted (every 5 s, when a queue is removed by rebalance, at shutdown) and with every pull (the
commit-offset piggyback). Persisting is oneway, as in RocketMQ: an update may be lost or overtaken
by a later one, and the broker keeps whatever arrived last. Each update sent is traced as COMMIT
(source ``client:<id>``); the broker traces the ones it accepted.

``persist_all`` sends only the queues the consumer still holds and forgets the others (RocketMQ's
``unusedMQ``), so a late result of a queue given away cannot leak into the broker through it.
"""

from __future__ import annotations

from collections.abc import Set

from reference.allocation.message_queue import MessageQueue
from reference.client.gateway import BrokerGateway, GatewayError
from reference.client.offset_store import OFFSET_NOT_FOUND, OFFSET_READ_ERROR, OffsetTable, ReadOffsetType
from reference.rules.codes import ResponseCode
from reference.trace import SourceRecorder


class RemoteBrokerOffsetStore(OffsetTable):
    def __init__(self, gateway: BrokerGateway, group: str, client_id: str, rec: SourceRecorder) -> None:
        super().__init__()
        self.gateway = gateway
        self.group = group
        self.client_id = client_id
        self.rec = rec

    def load(self) -> None:
        """Nothing to load: the broker holds the truth."""

    def read_offset(self, mq: MessageQueue, read_type: ReadOffsetType) -> int:
        memory = self.read_memory(mq, read_type)
        if memory is not None:
            return memory
        try:
            result = self.gateway.query_offset(self.group, mq.topic, mq.queue_id)
        except GatewayError:
            return OFFSET_READ_ERROR
        if result.code == ResponseCode.QUERY_NOT_FOUND:
            return OFFSET_NOT_FOUND
        if result.code != ResponseCode.SUCCESS:
            return OFFSET_READ_ERROR
        self.update_offset(mq, result.offset, False)
        return result.offset

    def persist_all(self, mqs: Set[MessageQueue]) -> None:
        if not mqs:
            return
        for mq, offset in list(self.offset_table.items()):
            if mq in mqs:
                self.update_consume_offset_to_broker(mq, offset)
            else:
                del self.offset_table[mq]

    def persist(self, mq: MessageQueue) -> None:
        offset = self.offset_table.get(mq)
        if offset is not None:
            self.update_consume_offset_to_broker(mq, offset)

    def remove_offset(self, mq: MessageQueue) -> None:
        self.offset_table.pop(mq, None)

    def update_consume_offset_to_broker(self, mq: MessageQueue, offset: int) -> None:
        """Send ``offset`` oneway and trace it as this client's COMMIT."""
        self.rec.record(
            "COMMIT", group=self.group, client_id=self.client_id, topic=mq.topic, broker=mq.broker_name,
            queue_id=mq.queue_id, offset=offset,
        )
        self.gateway.update_offset(self.group, mq.topic, mq.queue_id, offset, self.client_id)
