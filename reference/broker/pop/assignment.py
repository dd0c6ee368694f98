"""QueryAssignmentProcessor: broker-side rebalance for POP consumers (seed 004 §3.1, §4.1.1).

A POP client does not allocate queues itself: it asks the broker, which runs the named strategy
over the topic's queues and the group's registered client ids, both sorted. In POP mode the
allocation is ``allocate4Pop`` (:class:`~reference.allocation.pop.PopShareAllocation`): with
``pop_share_queue_num`` k, a queue is shared by k + 1 consumers, and k <= 0 (or k >= n - 1) gives
everyone every queue as queue id -1. A group and topic set to PULL mode (SET_MESSAGE_REQUEST_MODE) get the named
strategy's own allocation, as RocketMQ 5's doLoadBalance gives them. Broadcasting gives every client every queue.

Each answer that gives a client a queue it did not have records ASSIGN (queue id -1 is recorded
as every queue of the topic, with ``detail.pop_all``), with the queue's consume offset at that
moment and the client's assignment round as ``epoch``.
"""

from __future__ import annotations

from collections.abc import Callable

from reference.allocation.errors import AllocationError
from reference.allocation.message_queue import MessageQueue
from reference.allocation.ordering import sort_cid_all
from reference.allocation.pop import POP_ALL_QUEUE_ID, PopShareAllocation
from reference.allocation.registry import strategy_from_params
from reference.broker.consumer_manager import ConsumerManager
from reference.broker.protocol import MESSAGE_MODELS
from reference.rules.errors import InvalidRequest, require
from reference.store.names import check_name
from reference.store.store import MessageStore
from reference.trace import SourceRecorder

#: RocketMQ's default allocation strategy name for a POP client.
DEFAULT_STRATEGY = "AllocateMessageQueueAveragely"
#: How a group consumes a topic (RocketMQ's MessageRequestMode): POP allocates with allocate4Pop, PULL plainly.
REQUEST_MODES = ("PULL", "POP")
#: Error code when the group has no registered consumer (the client must heartbeat first).
CONSUMER_NOT_ONLINE = "CONSUMER_NOT_ONLINE"

#: The consume offset a queue's new owner starts from: (group, topic, queue_id) -> offset.
OffsetOf = Callable[[str, str, int], int]


class QueryAssignmentProcessor:
    def __init__(
        self,
        store: MessageStore,
        consumer_manager: ConsumerManager,
        broker_name: str,
        rec: SourceRecorder,
        offset_of: OffsetOf,
    ) -> None:
        self.store = store
        self.consumer_manager = consumer_manager
        self.broker_name = broker_name
        self.rec = rec
        self._offset_of = offset_of
        self._last: dict[tuple[str, str, str], frozenset[int]] = {}
        self._epoch: dict[tuple[str, str, str], int] = {}

    def query_assignment(
        self,
        topic: str,
        group: str,
        client_id: str,
        strategy_name: str = DEFAULT_STRATEGY,
        message_model: str = "CLUSTERING",
        pop_share_queue_num: int = -1,
        mode: str = "POP",
    ) -> list[MessageQueue]:
        """doLoadBalance: the queues ``client_id`` of ``group`` should pop (``mode`` POP) or pull (PULL), sorted."""
        require(mode in REQUEST_MODES, "mode", f"must be one of {REQUEST_MODES}")
        check_name(group, "consumerGroup")
        require(isinstance(client_id, str) and bool(client_id), "clientId", "must be a non-empty client id")
        require(message_model in MESSAGE_MODELS, "messageModel", f"must be one of {MESSAGE_MODELS}")
        require(isinstance(pop_share_queue_num, int), "popShareQueueNum", "must be an integer")
        nums = self.store.queue_nums(topic)  # raises TopicNotFound
        mq_all = [MessageQueue(topic, self.broker_name, q) for q in range(nums)]
        if message_model == "BROADCASTING":
            result = mq_all
        else:
            cid_all = self.consumer_manager.consumer_ids(group)
            if not cid_all:
                raise InvalidRequest(
                    "consumerGroup", f"group {group!r} has no registered consumer; heartbeat first",
                    CONSUMER_NOT_ONLINE,
                )
            try:
                inner = strategy_from_params(strategy_name, {})
                share = PopShareAllocation(inner, pop_share_queue_num) if mode == "POP" else inner
                result = share.allocate(group, client_id, mq_all, sort_cid_all(cid_all)) or []
            except KeyError:
                raise InvalidRequest("strategyName", f"unknown allocation strategy {strategy_name!r}") from None
            except (AllocationError, ValueError, TypeError) as exc:
                raise InvalidRequest("strategyName", f"allocation failed: {exc}") from None
        queues = sorted(set(result))
        self._record_assign(topic, group, client_id, queues, nums)
        return queues

    def _record_assign(self, topic: str, group: str, client_id: str, queues: list[MessageQueue], nums: int) -> None:
        pop_all = any(q.queue_id == POP_ALL_QUEUE_ID for q in queues)
        ids = frozenset(range(nums)) if pop_all else frozenset(q.queue_id for q in queues)
        key = (group, client_id, topic)
        before = self._last.get(key, frozenset())
        self._last[key] = ids
        added = sorted(ids - before)
        if not added:
            return
        epoch = self._epoch[key] = self._epoch.get(key, 0) + 1
        for queue_id in added:
            self.rec.record(
                "ASSIGN", group=group, client_id=client_id, topic=topic, broker=self.broker_name, queue_id=queue_id,
                offset=self._offset_of(group, topic, queue_id), epoch=epoch,
                detail={"pop_all": True} if pop_all else None,
            )
