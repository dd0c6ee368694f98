"""POP allocation on the broker (``QueryAssignmentProcessor#allocate4Pop``): queues shared on purpose.

In POP mode the broker allocates for the client, and a queue may be consumed by several consumers
at once (seed 004 §3.1, §4.1.2). With ``pop_share_queue_num`` = k and n consumers:

* k ≤ 0 or k ≥ n − 1: every consumer may pop every queue; each queue is returned with queue id −1,
  which tells the POP consumer to pop all queues of that broker (so entries repeat);
* otherwise, if n ≤ the number of queues: the consumer's own share by the inner strategy, followed by
  the shares of the k consumers after it in ``cid_all`` (wrapping), so each queue has k + 1 owners;
* otherwise (more consumers than queues) k is ignored and consumer i gets the one queue at position
  i mod q, so that nobody is idle.

The broker puts the list into a set before answering; the list order is kept here for the vectors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reference.allocation.errors import (
    CID_ALL_EMPTY,
    CURRENT_CID_EMPTY,
    MQ_ALL_EMPTY,
    NULL_POINTER,
    AllocationError,
)
from reference.allocation.javalang import is_blank
from reference.allocation.message_queue import MessageQueue
from reference.allocation.strategy import AllocateMessageQueueStrategy

#: Queue id meaning "all queues of this broker" in a POP assignment.
POP_ALL_QUEUE_ID = -1
#: The broker's default ``popShareQueueNum`` (every consumer pops every queue).
DEFAULT_POP_SHARE_QUEUE_NUM = -1


def shares_everything(pop_share_queue_num: int, consumer_count: int) -> bool:
    """True when the "every consumer pops every queue" branch applies."""
    return pop_share_queue_num <= 0 or pop_share_queue_num >= consumer_count - 1


class PopShareAllocation:
    """``allocate4Pop`` over an inner strategy, shaped as a strategy so it can be checked like one."""

    #: The registry builds the strategy named by ``innerStrategy`` (default Averagely) and hands it over.
    WRAPS_INNER = True
    JAVA_NAME = "QueryAssignmentProcessor.allocate4Pop"

    def __init__(
        self, inner: AllocateMessageQueueStrategy, pop_share_queue_num: int = DEFAULT_POP_SHARE_QUEUE_NUM
    ) -> None:
        self.inner = inner
        self.pop_share_queue_num = pop_share_queue_num

    @property
    def name(self) -> str:
        return f"POP_SHARE({self.pop_share_queue_num})-{self.inner.name}"

    @classmethod
    def from_params(cls, params: Mapping[str, Any], inner: AllocateMessageQueueStrategy) -> PopShareAllocation:
        """``{"popShareQueueNum": k, "innerStrategy": Java class name}`` (defaults −1, Averagely)."""
        k = int(params.get("popShareQueueNum", DEFAULT_POP_SHARE_QUEUE_NUM))
        return cls(inner, k)

    def allocate(
        self,
        consumer_group: str,
        current_cid: str | None,
        mq_all: Sequence[MessageQueue] | None,
        cid_all: Sequence[str] | None,
    ) -> list[MessageQueue]:
        if cid_all is None:
            raise AllocationError('Cannot invoke "java.util.List.size()" because "cidAll" is null', NULL_POINTER)
        if mq_all is None:
            raise AllocationError('Cannot invoke "java.util.List.size()" because "mqAll" is null', NULL_POINTER)
        k = self.pop_share_queue_num
        if shares_everything(k, len(cid_all)):
            return [MessageQueue(mq.topic, mq.broker_name, POP_ALL_QUEUE_ID) for mq in mq_all]
        if len(cid_all) > len(mq_all):
            return self._one_each(current_cid, mq_all, cid_all)
        result = list(self.inner.allocate(consumer_group, current_cid, mq_all, cid_all) or [])
        if current_cid in cid_all:
            index = cid_all.index(current_cid)
            for _ in range(k):
                index = (index + 1) % len(cid_all)
                result += self.inner.allocate(consumer_group, cid_all[index], mq_all, cid_all) or []
        return result

    @staticmethod
    def _one_each(
        current_cid: str | None, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        """The broker's private ``allocate``: its own checks (note ``isBlank``, not ``isEmpty``)."""
        if is_blank(current_cid):
            raise AllocationError(CURRENT_CID_EMPTY)
        if not mq_all:
            raise AllocationError(MQ_ALL_EMPTY)
        if not cid_all:
            raise AllocationError(CID_ALL_EMPTY)
        if current_cid not in cid_all:
            return []
        return [mq_all[cid_all.index(current_cid) % len(mq_all)]]
