"""Receipt handles: what a popped message carries so that its ack finds its checkpoint.

RocketMQ's handle is the ``extraInfo`` string (ExtraInfoUtil, seed 004 §4.3.1): the checkpoint's
start offset, the pop time, the invisible time, the revive queue id, whether the message came from
the retry topic, the broker name, the queue id and the message's own offset, separated by blanks.
Everything an ack needs to rebuild the checkpoint key is in it, so the broker keeps no table of
handles; a handle is valid exactly while its checkpoint is pending and its bit is not set.

Handles are unique per delivery: two deliveries of one message differ in pop time or in topic
(a revived message is read from the retry topic).
"""

from __future__ import annotations

from dataclasses import dataclass

from reference.broker.pop.keys import CheckpointKey
from reference.rules.errors import InvalidRequest
from reference.rules.topics import pop_retry_topic

#: Field separator of extraInfo (MessageConst.KEY_SEPARATOR).
SEPARATOR = " "
#: Error code for a handle that is malformed, unknown, expired or already used (gRPC's
#: INVALID_RECEIPT_HANDLE, 40013).
INVALID_RECEIPT_HANDLE = "INVALID_RECEIPT_HANDLE"
_FIELDS = 8


@dataclass(frozen=True)
class ReceiptHandle:
    start_offset: int
    pop_time: int
    invisible_time: int
    revive_queue_id: int
    retry: bool
    broker_name: str
    queue_id: int
    offset: int

    def encode(self) -> str:
        return SEPARATOR.join(
            str(x) for x in (
                self.start_offset, self.pop_time, self.invisible_time, self.revive_queue_id,
                1 if self.retry else 0, self.broker_name, self.queue_id, self.offset,
            )
        )

    def checkpoint_key(self, group: str, topic: str) -> CheckpointKey:
        """The key of the checkpoint this handle belongs to, for a request naming (group, topic)."""
        ck_topic = pop_retry_topic(group, topic) if self.retry else topic
        return CheckpointKey(ck_topic, group, self.queue_id, self.start_offset, self.pop_time, self.broker_name)

    @property
    def revive_time(self) -> int:
        return self.pop_time + self.invisible_time

    @classmethod
    def parse(cls, text: object) -> ReceiptHandle:
        """Parse a handle; InvalidRequest(receiptHandle, ..., INVALID_RECEIPT_HANDLE) if malformed."""

        def bad(rule: str) -> InvalidRequest:
            return InvalidRequest("receiptHandle", rule, INVALID_RECEIPT_HANDLE)

        if not isinstance(text, str) or not text:
            raise bad("must be a non-empty receipt handle string")
        parts = text.split(SEPARATOR)
        if len(parts) != _FIELDS:
            raise bad(f"malformed: expected {_FIELDS} blank-separated fields, got {len(parts)}")
        numbers = []
        for index in (0, 1, 2, 3, 6, 7):
            piece = parts[index]
            if not piece.isdigit() or not piece.isascii():
                raise bad(f"malformed: field {index + 1} must be a non-negative integer, got {piece!r}")
            numbers.append(int(piece))
        if parts[4] not in ("0", "1"):
            raise bad(f"malformed: field 5 (retry flag) must be 0 or 1, got {parts[4]!r}")
        if not parts[5]:
            raise bad("malformed: field 6 (broker name) is empty")
        start, pop_time, invisible, revive_qid, queue_id, offset = numbers
        if offset < start:
            raise bad("malformed: the message offset is below the checkpoint's start offset")
        return cls(start, pop_time, invisible, revive_qid, parts[4] == "1", parts[5], queue_id, offset)
