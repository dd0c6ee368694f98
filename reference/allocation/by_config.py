"""``AllocateMessageQueueByConfig``: whatever list this consumer was configured with.

It ignores every argument, checks nothing and returns the configured list as it is, in configured
order, even queues not in ``mq_all`` or duplicates, and ``None`` when nothing was configured (the
rebalance treats that as an empty share). Correctness of the group is left to whoever configures it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reference.allocation.message_queue import MessageQueue


class AllocateMessageQueueByConfig:
    JAVA_NAME = "AllocateMessageQueueByConfig"
    name = "CONFIG"

    def __init__(self, message_queue_list: Sequence[MessageQueue] | None = None) -> None:
        self.message_queue_list = None if message_queue_list is None else list(message_queue_list)

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> AllocateMessageQueueByConfig:
        """``{"messageQueueList": [queue objects] | null}``."""
        listed = params.get("messageQueueList")
        return cls(None if listed is None else [MessageQueue.from_json(q) for q in listed])

    def allocate(
        self,
        consumer_group: str,
        current_cid: str | None,
        mq_all: Sequence[MessageQueue] | None,
        cid_all: Sequence[str] | None,
    ) -> list[MessageQueue] | None:
        return None if self.message_queue_list is None else list(self.message_queue_list)
