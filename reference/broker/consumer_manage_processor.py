"""ConsumerManageProcessor's query-offset rule (seed 000, queryConsumerOffset).

With a committed offset, that offset. Without one, 0 when the queue still starts at 0 and its first
message is hot (not "in disk"), because then a new group can safely read the queue from its start;
otherwise QUERY_NOT_FOUND, and the consumer's consumeFromWhere decides. One class owns the rule so
the broker facade only validates and delegates, and a seeded fault can replace the rule alone.
"""

from __future__ import annotations

from reference.broker.protocol import QueryOffsetResult
from reference.rules.codes import ResponseCode
from reference.store.offsets import ConsumerOffsetManager
from reference.store.store import MessageStore


class ConsumerManageProcessor:
    def __init__(self, store: MessageStore, offsets: ConsumerOffsetManager) -> None:
        self.store = store
        self.offsets = offsets

    def query_consumer_offset(self, group: str, topic: str, queue_id: int) -> QueryOffsetResult:
        offset = self.offsets.query_offset(group, topic, queue_id)
        if offset >= 0:
            return QueryOffsetResult(ResponseCode.SUCCESS, offset)
        min_offset = self.store.get_min_offset_in_queue(topic, queue_id)
        if min_offset <= 0 and not self.store.check_in_disk_by_consume_offset(topic, queue_id, 0):
            return QueryOffsetResult(ResponseCode.SUCCESS, 0)
        return QueryOffsetResult(
            ResponseCode.QUERY_NOT_FOUND, -1, "no committed offset and offset 0 is not hot; "
            "the consumer decides where to start (consumeFromWhere)",
        )
