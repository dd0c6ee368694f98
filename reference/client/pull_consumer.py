"""DefaultMQPullConsumer: the application pulls, at offsets it chooses (RocketMQ's pull consumer API).

Unlike the push consumer there is no pull loop and no consume service: :meth:`pull` sends one pull
and hands the :class:`~reference.client.pull_result.PullResult` to a callback; the application keeps
its own offsets in the offset store (``update_consume_offset``, persisted every 5 s like the push
consumer's) and reads them back with ``fetch_consume_offset``. Topics registered with
``register_topic`` are rebalanced like a push consumer's (RebalancePullImpl, CONSUME_ACTIVELY: an idle
queue is never dropped as pull-expired) and each change of this consumer's share is reported to
``message_queue_listener``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

from reference.allocation.message_queue import MessageQueue
from reference.broker.protocol import ConsumerData, PullMessageRequest, PullResponse, PullSysFlag
from reference.client.client_instance import MQClientInstance
from reference.client.components import ClientComponents
from reference.client.config import ConsumerConfig, MessageModel
from reference.client.gateway import GatewayError
from reference.client.offset_store import OffsetStore, ReadOffsetType
from reference.client.process_queue import ProcessQueue
from reference.client.pull_request import PullRequest
from reference.client.pull_result import PullResult, process_pull_result
from reference.client.rebalance import CONSUME_ACTIVELY, RebalancePullImpl
from reference.rules.errors import require
from reference.rules.filter import SubscriptionData

#: What a pull hands back: (result, None) or (None, error).
PullResultCallback = Callable[[PullResult | None, GatewayError | None], None]
#: (topic, all queues, this consumer's share) after a rebalance changed the share.
MessageQueueListener = Callable[[str, frozenset[MessageQueue], frozenset[MessageQueue]], None]
#: RocketMQ's pullBlockIfNotFound suspends for BROKER_SUSPEND_MAX_TIME_MILLIS of the pull consumer: 20 s.
PULL_BLOCK_SUSPEND_MS = 20_000


class DefaultMQPullConsumer:
    def __init__(
        self, config: ConsumerConfig, instance: MQClientInstance, *,
        message_queue_listener: MessageQueueListener | None = None, offset_dir: str | Path | None = None,
    ) -> None:
        self.config = config
        self.instance = instance
        self.client_id = instance.client_id
        self.gateway = instance.gateway
        self.clock = instance.clock
        self.rec = instance.rec
        self.group = config.consumer_group
        self.message_queue_listener = message_queue_listener
        self.rebalance = RebalancePullImpl(self)

        self.offset_store: OffsetStore = ClientComponents().offset_store(
            config.message_model is MessageModel.CLUSTERING, self.gateway, self.group, self.client_id, self.rec,
            offset_dir,
        )
        self.started_ms = self.clock.now_ms()
        self.running = False

    def register_topic(self, topic: str, expression: str = "*") -> None:
        """Rebalance ``topic`` among the group and report this consumer's share to the listener."""
        self.rebalance.subscription_inner[topic] = SubscriptionData.parse(topic, expression, self.clock.now_ms())

    def start(self) -> None:
        if self.running:
            return
        require(self.instance.register_consumer(self.group, self), "consumerGroup",
                "a client instance runs one consumer per group")
        self.running = True
        self.started_ms = self.clock.now_ms()
        self.offset_store.load()
        self.instance.start()
        self.instance.send_heartbeat_to_all_broker()
        self.instance.rebalance_immediately()

    # -- the API ------------------------------------------------------------------------------
    def fetch_subscribe_message_queues(self, topic: str) -> list[MessageQueue]:
        nums = self.gateway.topic_queue_nums(topic)
        if nums is None:
            raise GatewayError("TOPIC_NOT_EXIST", f"topic {topic!r} does not exist")
        return [MessageQueue(topic, self.gateway.broker_name, q) for q in range(nums)]

    def pull(
        self, mq: MessageQueue, expression: str, offset: int, max_nums: int, callback: PullResultCallback,
        *, block: bool = False,
    ) -> None:
        """One pull; with ``block`` the broker may hold it (pullBlockIfNotFound)."""
        require(offset >= 0, "offset", "must be >= 0")
        require(1 <= max_nums <= 1024, "maxNums", "must be in [1, 1024]")
        sub = SubscriptionData.parse(mq.topic, expression)
        flags = PullSysFlag.SUBSCRIPTION | (PullSysFlag.SUSPEND if block else 0)
        suspend = PULL_BLOCK_SUSPEND_MS if block else 0
        request = PullMessageRequest(
            self.group, mq.topic, mq.queue_id, offset, max_nums, int(flags), 0, suspend, expression, 0,
            self.client_id,
        )
        self.rec.record(
            "PULL_REQ", group=self.group, client_id=self.client_id, topic=mq.topic, broker=mq.broker_name,
            queue_id=mq.queue_id, offset=offset, max_nums=max_nums, suspend_ms=suspend,
        )
        timeout = suspend + self.config.consumer_timeout_ms_when_suspend
        self.gateway.pull(request, partial(self._on_pull, mq, offset, sub, callback), timeout)

    def _on_pull(
        self, mq: MessageQueue, offset: int, sub: SubscriptionData, callback: PullResultCallback,
        response: PullResponse | None, error: GatewayError | None,
    ) -> None:
        if response is None:
            callback(None, error)
            return
        try:
            result = process_pull_result(response, sub)
        except GatewayError as exc:
            callback(None, exc)
            return
        self.rec.record(
            "PULL_RESP", group=self.group, client_id=self.client_id, topic=mq.topic, broker=mq.broker_name,
            queue_id=mq.queue_id, offset=offset,
            status=response.status.name if response.status is not None else response.code.name,
            next_offset=response.next_begin_offset, min_offset=response.min_offset,
            max_offset=response.max_offset, count=len(response.messages), held_ms=response.held_ms,
        )
        callback(result, None)

    def update_consume_offset(self, mq: MessageQueue, offset: int) -> None:
        require(offset >= 0, "offset", "must be >= 0")
        self.offset_store.update_offset(mq, offset, False)

    def fetch_consume_offset(self, mq: MessageQueue, from_store: bool) -> int:
        read_type = ReadOffsetType.READ_FROM_STORE if from_store else ReadOffsetType.MEMORY_FIRST_THEN_STORE
        return self.offset_store.read_offset(mq, read_type)

    def min_offset(self, mq: MessageQueue) -> int:
        return self.gateway.min_offset(mq.topic, mq.queue_id)

    def max_offset(self, mq: MessageQueue) -> int:
        return self.gateway.max_offset(mq.topic, mq.queue_id)

    def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        return self.gateway.search_offset(mq.topic, mq.queue_id, timestamp_ms)

    # -- what the instance and rebalance ask ---------------------------------------------------
    def consumer_data(self) -> ConsumerData:
        return ConsumerData(
            self.group, tuple(self.rebalance.subscription_inner.values()), self.config.message_model.value,
            CONSUME_ACTIVELY, self.config.consume_from_where.value,
        )

    def do_rebalance(self) -> None:
        if self.running and self.rebalance.subscription_inner:
            self.rebalance.do_rebalance()

    def persist_consumer_offset(self) -> None:
        """Persist every queue with an offset (the pull consumer's queues are the application's)."""
        if self.running:
            self.offset_store.persist_all(frozenset(self._offset_queues()))

    def _offset_queues(self) -> list[MessageQueue]:
        return [*self.offset_store.offset_table, *self.rebalance.process_queue_table]

    def pull_message(self, pull_request: PullRequest) -> None:
        """The application pulls; the instance never dispatches PullRequests to this consumer."""

    def new_process_queue(self) -> ProcessQueue:
        return ProcessQueue(self.clock.now_ms(), self.config.pull_max_idle_time_ms)

    def execute_pull_request_immediately(self, pull_request: PullRequest) -> None:
        """RebalancePullImpl makes no PullRequests."""

    def message_queue_changed(
        self, topic: str, mq_all: frozenset[MessageQueue], mq_divided: frozenset[MessageQueue]
    ) -> None:
        if self.message_queue_listener is not None:
            self.message_queue_listener(topic, mq_all, mq_divided)

    def shutdown(self) -> None:
        if not self.running:
            return
        self.persist_consumer_offset()
        self.running = False
        self.instance.unregister_consumer(self.group)
        if not self.instance.consumer_table:
            self.instance.shutdown()
