"""``AllocateMessageQueueAveragelyByCircle``: deal the queues round the table like cards.

Queue at position p goes to the consumer at position p mod n, so consumer i takes positions
i, i + n, i + 2n, … (seed 001 §3, "环形平均策略"). Balanced to within one queue, like Averagely, but
the shares interleave instead of forming blocks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reference.allocation.message_queue import MessageQueue
from reference.allocation.strategy import CheckedStrategy


class AllocateMessageQueueAveragelyByCircle(CheckedStrategy):
    JAVA_NAME = "AllocateMessageQueueAveragelyByCircle"
    name = "AVG_BY_CIRCLE"

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> AllocateMessageQueueAveragelyByCircle:
        return cls()

    def share(
        self, consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        return list(mq_all[cid_all.index(current_cid) :: len(cid_all)])
