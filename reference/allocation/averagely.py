"""``AllocateMessageQueueAveragely``: contiguous blocks, the remainder to the first consumers.

With q queues and n consumers, consumer i takes a block of q // n queues, and the first q % n
consumers take one more; blocks follow each other in ``cid_all`` order. With q ≤ n the first q
consumers take one queue each and the rest take none. RocketMQ's default strategy (seed 001 §3).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reference.allocation.message_queue import MessageQueue
from reference.allocation.strategy import CheckedStrategy


def average_block(index: int, queue_count: int, consumer_count: int) -> range:
    """Positions in ``mq_all`` owned by the consumer at ``index`` (empty when it gets none)."""
    mod = queue_count % consumer_count
    takes_extra = mod > 0 and index < mod
    if queue_count <= consumer_count:
        size = 1
    else:
        size = queue_count // consumer_count + (1 if takes_extra else 0)
    start = index * size if takes_extra else index * size + mod
    return range(start, start + max(0, min(size, queue_count - start)))


class AllocateMessageQueueAveragely(CheckedStrategy):
    """Averagely: balanced to within one queue; a join or leave shifts every block after it."""

    JAVA_NAME = "AllocateMessageQueueAveragely"
    name = "AVG"

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> AllocateMessageQueueAveragely:
        return cls()

    def share(
        self, consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        block = average_block(cid_all.index(current_cid), len(mq_all), len(cid_all))
        return [mq_all[i] for i in block]
