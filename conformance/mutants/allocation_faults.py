"""Seeded faults in the allocation strategies (client-side rebalance, and the broker's for POP)."""

from __future__ import annotations

from collections.abc import Sequence

from reference.allocation.averagely import AllocateMessageQueueAveragely
from reference.allocation.by_circle import AllocateMessageQueueAveragelyByCircle
from reference.allocation.message_queue import MessageQueue


class AveragelyRemainderToLast(AllocateMessageQueueAveragely):
    """The q mod n extra queues go to the last consumers instead of the first: still a balanced
    partition, but not RocketMQ's, so two clients of different implementations overlap and miss."""

    def share(
        self, consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        n, q, index = len(cid_all), len(mq_all), cid_all.index(current_cid)
        if q <= n:
            return [mq_all[index]] if index < q else []
        sizes = [q // n + (1 if i >= n - q % n else 0) for i in range(n)]
        start = sum(sizes[:index])
        return list(mq_all[start:start + sizes[index]])


class CircleStartsAtSecond(AllocateMessageQueueAveragelyByCircle):
    """The queue at position p goes to consumer (p + 1) mod n instead of p mod n."""

    def share(
        self, consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        index = cid_all.index(current_cid)
        return [mq for p, mq in enumerate(mq_all) if (p + 1) % len(cid_all) == index]
