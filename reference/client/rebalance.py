"""RebalanceImpl: which queues this consumer owns, and what happens when that changes (seed 001 §3-4).

Theory of operation
-------------------
Every round (:meth:`RebalanceImpl.do_rebalance`, run by RebalanceService) recomputes, per
subscribed topic, the set of queues this client should own:

* **broadcasting**: all of the topic's queues;
* **clustering**: the allocation strategy's share of this client among the group's consumers. Both
  lists are sorted first, because every member computes its share on its own and only identical
  views make the shares disjoint and complete (seed 001 §3: "同一个消费组内看到的视图应保持一致").

Then :meth:`RebalanceImpl.update_process_queue_table_in_rebalance` applies the new set:

* a queue no longer in the set is **dropped** (its ProcessQueue's ``dropped`` flag set, which stops
  its pull loop and discards in-flight results), its offset persisted to the broker and forgotten,
  then it is removed (REVOKE);
* a queue still in the set whose pull loop has been idle for more than 120 s is dropped and removed
  the same way (push consumers only: the loop is presumed lost), and recreated below;
* a queue new to the set gets a fresh ProcessQueue starting at ``computePullFromWhere`` (the
  broker's committed offset, or the consume-from-where rule when there is none) and a PullRequest
  (ASSIGN). A queue whose start cannot be computed now is skipped until the next round.

ASSIGN and REVOKE carry ``epoch``: this client's round number.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence, Set
from typing import Protocol

from reference.allocation.errors import AllocationError
from reference.allocation.message_queue import MessageQueue
from reference.allocation.registry import strategy_from_params
from reference.allocation.strategy import AllocateMessageQueueStrategy
from reference.client.config import (
    CONSUME_TIMESTAMP_LOOKBACK_MS,
    ConsumeFromWhere,
    ConsumerConfig,
    MessageModel,
)
from reference.client.gateway import BrokerGateway, GatewayError
from reference.client.offset_store import OFFSET_NOT_FOUND, OffsetStore, ReadOffsetType
from reference.client.process_queue import ProcessQueue
from reference.client.pull_request import PullRequest
from reference.clock import Clock
from reference.rules.filter import SubscriptionData
from reference.rules.topics import is_retry_topic
from reference.trace import SourceRecorder

CONSUME_PASSIVELY = "CONSUME_PASSIVELY"
CONSUME_ACTIVELY = "CONSUME_ACTIVELY"


class RebalanceOwner(Protocol):
    """What rebalancing needs from its consumer."""

    config: ConsumerConfig
    client_id: str
    gateway: BrokerGateway
    offset_store: OffsetStore
    clock: Clock
    rec: SourceRecorder
    started_ms: int

    def new_process_queue(self) -> ProcessQueue: ...

    def execute_pull_request_immediately(self, pull_request: PullRequest) -> None: ...


class PullRebalanceOwner(RebalanceOwner, Protocol):
    """A pull consumer, which is also told of its new queues."""

    def message_queue_changed(
        self, topic: str, mq_all: frozenset[MessageQueue], mq_divided: frozenset[MessageQueue]
    ) -> None: ...


class RebalanceImpl:
    consume_type = CONSUME_PASSIVELY

    def __init__(self, owner: RebalanceOwner) -> None:
        self.owner = owner
        self.config = owner.config
        self.group = owner.config.consumer_group
        self.strategy: AllocateMessageQueueStrategy = strategy_from_params(owner.config.allocate_strategy, {})
        self.process_queue_table: dict[MessageQueue, ProcessQueue] = {}
        self.topic_subscribe_info_table: dict[str, frozenset[MessageQueue]] = {}
        self.subscription_inner: dict[str, SubscriptionData] = {}
        #: This client's rebalance round (the trace's ``epoch``).
        self.epoch = 0

    # -- a round -------------------------------------------------------------------------------
    def do_rebalance(self) -> None:
        self.epoch += 1
        for topic in list(self.subscription_inner):
            self.rebalance_by_topic(topic)
        self.truncate_message_queue_not_my_topic()

    def rebalance_by_topic(self, topic: str) -> None:
        mq_set = self.update_topic_route(topic)
        if self.config.message_model is MessageModel.BROADCASTING:
            if mq_set and self.update_process_queue_table_in_rebalance(topic, mq_set):
                self.message_queue_changed(topic, mq_set, mq_set)
            return
        cid_all = self.find_consumer_id_list()
        if not mq_set or cid_all is None:
            return  # no route or no member list this round: keep what we have
        mq_all, cid_all = self.sort_view(mq_set, cid_all)
        try:
            allocated = self.strategy.allocate(self.group, self.owner.client_id, mq_all, cid_all)
        except AllocationError:
            return  # e.g. an empty member list right after a broker restart: keep what we have
        mine = frozenset(allocated or ())
        if self.update_process_queue_table_in_rebalance(topic, mine):
            self.message_queue_changed(topic, mq_set, mine)

    def message_queue_changed(self, topic: str, mq_all: Set[MessageQueue], mq_divided: Set[MessageQueue]) -> None:
        """Called after a round changed this client's queues of ``topic``."""

    def sort_view(self, mq_set: Iterable[MessageQueue], cid_all: Sequence[str]) -> tuple[list[MessageQueue], list[str]]:
        """Seed 001 §3: sort both lists so that every member allocates from the same view."""
        return sorted(mq_set), sorted(cid_all)

    def update_topic_route(self, topic: str) -> frozenset[MessageQueue] | None:
        """The topic's queues from the broker, cached; the cached route when the broker cannot tell."""
        try:
            nums = self.owner.gateway.topic_queue_nums(topic)
        except GatewayError:
            return self.topic_subscribe_info_table.get(topic)
        if nums is None:
            self.topic_subscribe_info_table.pop(topic, None)
            return None
        broker = self.owner.gateway.broker_name
        cached = self.topic_subscribe_info_table.get(topic)
        if cached is None or len(cached) != nums:
            cached = frozenset(MessageQueue(topic, broker, q) for q in range(nums))
            self.topic_subscribe_info_table[topic] = cached
        return cached

    def find_consumer_id_list(self) -> list[str] | None:
        try:
            return self.owner.gateway.consumer_ids(self.group)
        except GatewayError:
            return None

    # -- applying a new set --------------------------------------------------------------------
    def update_process_queue_table_in_rebalance(self, topic: str, mq_set: Set[MessageQueue]) -> bool:
        changed = False
        now = self.owner.clock.now_ms()
        for mq, pq in list(self.process_queue_table.items()):
            if mq.topic != topic:
                continue
            if mq not in mq_set:
                reason = "rebalance"
            elif self.consume_type == CONSUME_PASSIVELY and pq.is_pull_expired(now):
                reason = "pull_expired"
            else:
                continue
            pq.dropped = True
            if self.remove_unnecessary_message_queue(mq, pq):
                del self.process_queue_table[mq]
                self._record_revoke(mq, reason)
                changed = True
        pull_requests = []
        for mq in sorted(mq_set):
            if mq in self.process_queue_table:
                continue
            self.remove_dirty_offset(mq)
            pq = self.owner.new_process_queue()
            next_offset = self.compute_pull_from_where(mq)
            if next_offset < 0:
                continue  # cannot tell where to start now; the next round tries again
            self.process_queue_table[mq] = pq
            self.owner.rec.record(
                "ASSIGN", group=self.group, client_id=self.owner.client_id, topic=mq.topic, broker=mq.broker_name,
                queue_id=mq.queue_id, offset=next_offset, epoch=self.epoch,
            )
            pull_requests.append(PullRequest(self.group, mq, pq, next_offset))
            changed = True
        self.dispatch_pull_request(pull_requests)
        return changed

    def remove_unnecessary_message_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        """Persist the queue's offset to the broker, then forget it (RebalancePushImpl)."""
        self.owner.offset_store.persist(mq)
        self.owner.offset_store.remove_offset(mq)
        return True

    def remove_dirty_offset(self, mq: MessageQueue) -> None:
        """A newly assigned queue's offset is read fresh from the store, never from a stale entry."""
        self.owner.offset_store.remove_offset(mq)

    def remove_process_queue(self, mq: MessageQueue, pq: ProcessQueue, reason: str) -> None:
        """Drop and remove ``mq`` outside a round (an illegal offset), if ``pq`` still serves it."""
        if self.process_queue_table.get(mq) is not pq:
            return
        del self.process_queue_table[mq]
        pq.dropped = True
        self.remove_unnecessary_message_queue(mq, pq)
        self._record_revoke(mq, reason)

    def truncate_message_queue_not_my_topic(self) -> None:
        for mq, pq in list(self.process_queue_table.items()):
            if mq.topic not in self.subscription_inner:
                pq.dropped = True
                del self.process_queue_table[mq]
                self._record_revoke(mq, "unsubscribed")

    def drop_all(self, reason: str) -> None:
        """Give every queue up without persisting (the caller persisted already): shutdown."""
        for mq, pq in list(self.process_queue_table.items()):
            pq.dropped = True
            del self.process_queue_table[mq]
            self._record_revoke(mq, reason)

    def dispatch_pull_request(self, pull_requests: list[PullRequest]) -> None:
        for pull_request in pull_requests:
            self.owner.execute_pull_request_immediately(pull_request)

    def _record_revoke(self, mq: MessageQueue, reason: str) -> None:
        self.owner.rec.record(
            "REVOKE", group=self.group, client_id=self.owner.client_id, topic=mq.topic, broker=mq.broker_name,
            queue_id=mq.queue_id, epoch=self.epoch, detail={"reason": reason},
        )

    # -- where a new queue starts --------------------------------------------------------------
    def compute_pull_from_where(self, mq: MessageQueue) -> int:
        """RebalancePushImpl.computePullFromWhere: the stored offset, else the consume-from-where rule;
        negative when it cannot be computed now."""
        last = self.owner.offset_store.read_offset(mq, ReadOffsetType.READ_FROM_STORE)
        if last >= 0:
            return last
        if last != OFFSET_NOT_FOUND:
            return -1
        where = self.config.consume_from_where
        gateway = self.owner.gateway
        retry = is_retry_topic(mq.topic)
        try:
            if where is ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET:
                return 0 if retry else gateway.max_offset(mq.topic, mq.queue_id)
            if where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET:
                return 0
            if retry:
                return gateway.max_offset(mq.topic, mq.queue_id)
            timestamp = self.config.consume_timestamp_ms
            if timestamp is None:
                timestamp = self.owner.started_ms - CONSUME_TIMESTAMP_LOOKBACK_MS
            return gateway.search_offset(mq.topic, mq.queue_id, timestamp)
        except GatewayError:
            return -1


class RebalancePushImpl(RebalanceImpl):
    """The push consumer's rebalance (the class seed 001 walks through)."""


class RebalancePullImpl(RebalanceImpl):
    """A pull consumer's rebalance: it drives its own pulls, so no PullRequests are made, an idle
    queue is never 'pull expired', and new queues are reported to its listener."""

    consume_type = CONSUME_ACTIVELY
    owner: PullRebalanceOwner

    def __init__(self, owner: PullRebalanceOwner) -> None:
        super().__init__(owner)

    def dispatch_pull_request(self, pull_requests: list[PullRequest]) -> None:
        """The application pulls; nothing to dispatch."""

    def compute_pull_from_where(self, mq: MessageQueue) -> int:
        """RebalancePullImpl: the application chooses its offsets (fetch_consume_offset)."""
        return 0

    def message_queue_changed(self, topic: str, mq_all: Set[MessageQueue], mq_divided: Set[MessageQueue]) -> None:
        self.owner.message_queue_changed(topic, frozenset(mq_all), frozenset(mq_divided))
