"""``AllocateMessageQueueByMachineRoom``: only queues of brokers in the group's machine rooms.

Broker names follow ``<room>@<broker>``. A queue is eligible when its broker name splits on ``@``
into exactly two parts (Java ``split``: trailing empty parts dropped) and the first is one of
``consumeridcs``; eligible queues are dealt in blocks of ``len // n`` with the remainder handed out one
each, at the end, to the first consumers. Queues of other rooms are left to some other group
(seed 001 §3, "同机房策略").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from reference.allocation.javalang import java_split
from reference.allocation.message_queue import MessageQueue
from reference.allocation.strategy import CheckedStrategy

#: Separates the machine room from the broker in ``<room>@<broker>``.
ROOM_SEPARATOR = "@"


def broker_room(broker_name: str) -> str | None:
    """The room of a ``<room>@<broker>`` name, or ``None`` when the name does not have that form."""
    parts = java_split(broker_name, ROOM_SEPARATOR)
    return parts[0] if len(parts) == 2 else None


class AllocateMessageQueueByMachineRoom(CheckedStrategy):
    JAVA_NAME = "AllocateMessageQueueByMachineRoom"
    name = "MACHINE_ROOM"

    def __init__(self, consumeridcs: Iterable[str]) -> None:
        self.consumeridcs = frozenset(consumeridcs)

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> AllocateMessageQueueByMachineRoom:
        """``{"consumeridcs": [room, …]}`` (a ``Set`` in Java)."""
        return cls(params["consumeridcs"])

    def eligible(self, mq: MessageQueue) -> bool:
        return broker_room(mq.broker_name) in self.consumeridcs

    def share(
        self, consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        index, n = cid_all.index(current_cid), len(cid_all)
        eligible = [mq for mq in mq_all if self.eligible(mq)]
        per_consumer, remainder = divmod(len(eligible), n)
        result = eligible[per_consumer * index : per_consumer * (index + 1)]
        if remainder > index:
            result.append(eligible[index + per_consumer * n])
        return result
