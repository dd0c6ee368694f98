"""``MessageQueue``: the unit of allocation, a (topic, broker name, queue id) triple."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from reference.allocation.ordering import java_string_key


@dataclass(frozen=True, slots=True, order=False)
class MessageQueue:
    """A queue of a topic on one broker. Hashable; ordered as RocketMQ's ``compareTo``: topic, then
    broker name (both in Java string order), then queue id numerically (so ``2 < 10``)."""

    topic: str
    broker_name: str
    queue_id: int

    @property
    def sort_key(self) -> tuple[bytes, bytes, int]:
        return (java_string_key(self.topic), java_string_key(self.broker_name), self.queue_id)

    def __lt__(self, other: MessageQueue) -> bool:
        return self.sort_key < other.sort_key

    def __le__(self, other: MessageQueue) -> bool:
        return self.sort_key <= other.sort_key

    def __gt__(self, other: MessageQueue) -> bool:
        return self.sort_key > other.sort_key

    def __ge__(self, other: MessageQueue) -> bool:
        return self.sort_key >= other.sort_key

    def java_str(self) -> str:
        """Java's ``toString()``. It is not cosmetic: the consistent-hash strategy hashes it to place
        the queue on the ring, and error messages quote it."""
        return f"MessageQueue [topic={self.topic}, brokerName={self.broker_name}, queueId={self.queue_id}]"

    def to_json(self) -> dict[str, Any]:
        """The wire form used by the golden vectors and the strategy exec protocol."""
        return {"topic": self.topic, "brokerName": self.broker_name, "queueId": self.queue_id}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> MessageQueue:
        """Parse the wire form; raises ``ValueError`` naming the field that is missing or mistyped."""
        if not isinstance(obj, Mapping):
            raise ValueError(f"message queue must be an object, got {type(obj).__name__}")
        topic, broker, queue_id = obj.get("topic"), obj.get("brokerName"), obj.get("queueId")
        if not isinstance(topic, str):
            raise ValueError("message queue field 'topic' must be a string")
        if not isinstance(broker, str):
            raise ValueError("message queue field 'brokerName' must be a string")
        if not isinstance(queue_id, int) or isinstance(queue_id, bool):
            raise ValueError("message queue field 'queueId' must be an integer")
        return cls(topic, broker, queue_id)


def sort_mq_all(mq_all: Iterable[MessageQueue]) -> list[MessageQueue]:
    """``Collections.sort(mqAll)`` as the rebalance does it (see :meth:`MessageQueue.sort_key`)."""
    return sorted(mq_all, key=lambda mq: mq.sort_key)
