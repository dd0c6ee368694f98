"""DefaultMQPushConsumer: the long-polling "push" consumer (seed 000; seed 001).

Theory of operation
-------------------
Rebalance gives the consumer a PullRequest per owned queue. :meth:`DefaultMQPushConsumer.pull_message`
runs one step of that queue's pull loop:

1. a dropped queue's request is discarded: the loop ends (seed 001 §4);
2. flow control: with more than ``pullThresholdForQueue`` (1 000) messages or
   ``pullThresholdSizeForQueue`` (100 MiB) cached, the request is put back after 50 ms;
3. otherwise a pull is sent with the SUSPEND flag (the broker may hold it 15 s; the client waits
   30 s), carrying the queue's in-memory offset as a commit piggyback.

The answer (:meth:`_on_pull`) moves the loop on:

* FOUND: cache the messages, hand them to the consume service, pull again at once;
* NO_NEW_MSG / NO_MATCHED_MSG: adopt nextBeginOffset (committing it when nothing is cached) and pull
  again at once;
* OFFSET_ILLEGAL (PULL_OFFSET_MOVED): adopt nextBeginOffset, drop the queue, and 10 s later commit
  and persist the new offset and remove the queue; the next rebalance round recreates it from there;
* an error (timeout, refused, any other code): pull again after 3 s.

Every pull is traced as PULL_REQ and, when answered, PULL_RESP (source ``client:<id>``).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from reference.allocation.message_queue import MessageQueue
from reference.broker.protocol import ConsumerData, PullMessageRequest, PullResponse, PullSysFlag, SendBackResult
from reference.client.client_instance import MQClientInstance
from reference.client.components import ClientComponents
from reference.client.config import ConsumerConfig, MessageModel
from reference.client.consume_service import MessageListenerConcurrently
from reference.client.executor import BusyTime, ConsumeExecutor
from reference.client.gateway import GatewayError
from reference.client.offset_store import OffsetStore, ReadOffsetType
from reference.client.process_queue import ProcessQueue
from reference.client.pull_request import PullRequest
from reference.client.pull_result import PullStatus, process_pull_result
from reference.client.rebalance import CONSUME_PASSIVELY
from reference.rules.errors import require
from reference.rules.filter import SubscriptionData
from reference.rules.topics import retry_topic
from reference.store.message import StoredMessage

_MIB = 1024 * 1024
_FOUND, _OFFSET_ILLEGAL = PullStatus.FOUND, PullStatus.OFFSET_ILLEGAL
#: The sysFlag bits as plain ints: IntFlag arithmetic is slow on the pull loop's hot path.
_SUSPEND, _COMMIT_OFFSET, _SUBSCRIPTION = (
    int(PullSysFlag.SUSPEND), int(PullSysFlag.COMMIT_OFFSET), int(PullSysFlag.SUBSCRIPTION)
)


class DefaultMQPushConsumer:
    def __init__(
        self,
        config: ConsumerConfig,
        listener: MessageListenerConcurrently,
        instance: MQClientInstance,
        *,
        components: ClientComponents | None = None,
        busy_ms: BusyTime | None = None,
        offset_dir: str | Path | None = None,
    ) -> None:
        """``busy_ms`` models the listener's processing time (see ConsumeExecutor); ``offset_dir`` is
        where a broadcasting consumer keeps its offsets file (required in broadcasting)."""
        self.config = config
        self.listener = listener
        self.instance = instance
        self.components = components if components is not None else ClientComponents()
        self.client_id = instance.client_id
        self.gateway = instance.gateway
        self.clock = instance.clock
        self.rec = instance.rec
        self.group = config.consumer_group
        self.clustering = config.message_model is MessageModel.CLUSTERING
        self._busy_ms = busy_ms
        self.rebalance = self.components.rebalance(self)
        self.offset_store: OffsetStore = self.components.offset_store(
            self.clustering, self.gateway, self.group, self.client_id, self.rec, offset_dir
        )
        self.consume_service = self.components.consume_service(
            self, listener, ConsumeExecutor(self.clock, config.consume_thread_min, busy_ms), self.clock, self.rec
        )
        self.started_ms = self.clock.now_ms()
        self.running = False

    # -- set-up --------------------------------------------------------------------------------
    def subscribe(self, topic: str, expression: str = "*") -> None:
        self.rebalance.subscription_inner[topic] = SubscriptionData.parse(topic, expression, self.clock.now_ms())

    def start(self) -> None:
        """Register, heartbeat, rebalance at once (seed 001 §2)."""
        if self.running:
            return
        require(self.instance.register_consumer(self.group, self), "consumerGroup",
                "a client instance runs one consumer per group")
        self.running = True
        self.started_ms = self.clock.now_ms()
        if self.clustering:
            topic = retry_topic(self.group)
            self.rebalance.subscription_inner[topic] = SubscriptionData.parse(topic, "*", self.started_ms)
        self.offset_store.load()
        for sub in self.rebalance.subscription_inner.values():
            self.rec.record(
                "SUBSCRIBE", group=self.group, client_id=self.client_id, topic=sub.topic,
                expression=sub.expression, model=self.config.message_model.value,
            )
        self.instance.start()
        self.instance.send_heartbeat_to_all_broker()
        self.instance.rebalance_immediately()

    def consumer_data(self) -> ConsumerData:
        return ConsumerData(
            self.group, tuple(self.rebalance.subscription_inner.values()), self.config.message_model.value,
            CONSUME_PASSIVELY, self.config.consume_from_where.value,
        )

    def new_process_queue(self) -> ProcessQueue:
        return self.components.process_queue(self.clock.now_ms(), self.config.pull_max_idle_time_ms)

    # -- the pull loop -------------------------------------------------------------------------
    def discards(self, pull_request: PullRequest) -> bool:
        """Seed 001 §4: a dropped queue's PullRequest is discarded, never put back, ending its loop."""
        return pull_request.process_queue.dropped

    def execute_pull_request_immediately(self, pull_request: PullRequest) -> None:
        self.instance.pull_message_service.execute_pull_request_immediately(pull_request)

    def execute_pull_request_later(self, pull_request: PullRequest, delay_ms: int) -> None:
        self.instance.pull_message_service.execute_pull_request_later(pull_request, delay_ms)

    def pull_message(self, pull_request: PullRequest) -> None:
        if self.discards(pull_request):
            return
        config = self.config
        pq = pull_request.process_queue
        pq.last_pull_timestamp = self.clock.now_ms()
        if not self.running:
            self.execute_pull_request_later(pull_request, config.pull_time_delay_ms_when_exception)
            return
        if (pq.msg_count > config.pull_threshold_for_queue
                or pq.msg_size // _MIB > config.pull_threshold_size_for_queue_mib):
            self.execute_pull_request_later(pull_request, config.pull_time_delay_ms_when_flow_control)
            return
        mq = pull_request.message_queue
        sub = self.rebalance.subscription_inner.get(mq.topic)
        if sub is None:
            self.execute_pull_request_later(pull_request, config.pull_time_delay_ms_when_exception)
            return
        flags = _SUSPEND
        commit_offset = 0
        if self.clustering:
            memory_offset = self.offset_store.read_offset(mq, ReadOffsetType.READ_FROM_MEMORY)
            if memory_offset > 0:
                commit_offset = memory_offset
                flags |= _COMMIT_OFFSET
        expression = None
        if config.post_subscription_when_pull:
            flags |= _SUBSCRIPTION
            expression = sub.expression
        request = PullMessageRequest(
            self.group, mq.topic, mq.queue_id, pull_request.next_offset, config.pull_batch_size, flags,
            commit_offset, config.broker_suspend_max_time_ms, expression, sub.sub_version, self.client_id,
        )
        record = self.rec.record
        record(
            "PULL_REQ", group=self.group, client_id=self.client_id, topic=mq.topic, broker=mq.broker_name,
            queue_id=mq.queue_id, offset=pull_request.next_offset, max_nums=config.pull_batch_size,
            suspend_ms=config.broker_suspend_max_time_ms,
        )
        if commit_offset:
            record(
                "COMMIT", group=self.group, client_id=self.client_id, topic=mq.topic, broker=mq.broker_name,
                queue_id=mq.queue_id, offset=commit_offset,
            )
        self.gateway.pull(
            request, partial(self._on_pull, pull_request, sub), config.consumer_timeout_ms_when_suspend
        )

    def _on_pull(
        self, pull_request: PullRequest, sub: SubscriptionData, response: PullResponse | None,
        error: GatewayError | None,
    ) -> None:
        if response is None:
            self.execute_pull_request_later(pull_request, self.config.pull_time_delay_ms_when_exception)
            return
        try:
            result = process_pull_result(response, sub)
        except GatewayError:
            self.execute_pull_request_later(pull_request, self.config.pull_time_delay_ms_when_exception)
            return
        mq = pull_request.message_queue
        self.rec.record(
            "PULL_RESP", group=self.group, client_id=self.client_id, topic=mq.topic, broker=mq.broker_name,
            queue_id=mq.queue_id, offset=pull_request.next_offset,
            status=response.status.name if response.status is not None else response.code.name,
            next_offset=response.next_begin_offset, min_offset=response.min_offset,
            max_offset=response.max_offset, count=len(response.messages), held_ms=response.held_ms,
        )
        status = result.pull_status
        if status is _FOUND:
            pull_request.next_offset = result.next_begin_offset
            msgs = result.msg_found_list
            if msgs:
                pq = pull_request.process_queue
                dispatch = pq.put_message(msgs)
                self.consume_service.submit_consume_request(msgs, pq, mq, dispatch)
                if self.config.pull_interval_ms > 0:
                    self.execute_pull_request_later(pull_request, self.config.pull_interval_ms)
                    return
            self.execute_pull_request_immediately(pull_request)
        elif status is _OFFSET_ILLEGAL:
            pull_request.next_offset = result.next_begin_offset
            pull_request.process_queue.dropped = True
            self.instance.pull_message_service.execute_task_later(
                partial(self._fix_illegal_offset, pull_request), self.config.offset_illegal_fix_delay_ms
            )
        else:
            pull_request.next_offset = result.next_begin_offset
            self.correct_tags_offset(pull_request)
            self.execute_pull_request_immediately(pull_request)

    def correct_tags_offset(self, pull_request: PullRequest) -> None:
        """Nothing cached: every message below nextOffset is done, so it is the commit point."""
        if pull_request.process_queue.msg_count == 0:
            self.offset_store.update_offset(pull_request.message_queue, pull_request.next_offset, True)

    def _fix_illegal_offset(self, pull_request: PullRequest) -> None:
        """10 s after OFFSET_ILLEGAL: commit the broker's offset and remove the queue. Done only while
        this ProcessQueue still serves the queue; RocketMQ does it unconditionally, which commits for
        a queue that a rebalance meanwhile gave away."""
        mq, pq = pull_request.message_queue, pull_request.process_queue
        if self.rebalance.process_queue_table.get(mq) is not pq:
            return
        self.offset_store.update_offset(mq, pull_request.next_offset, False)
        self.offset_store.persist(mq)
        self.rebalance.remove_process_queue(mq, pq, "offset_moved")

    # -- services the instance and the consume service call ------------------------------------
    def do_rebalance(self) -> None:
        if self.running:
            self.rebalance.do_rebalance()

    def persist_consumer_offset(self) -> None:
        if self.running:
            self.offset_store.persist_all(frozenset(self.rebalance.process_queue_table))

    def send_message_back(self, msg: StoredMessage, delay_level: int) -> SendBackResult | None:
        """consumerSendMessageBack; None when it failed (the message is then consumed again here)."""
        try:
            return self.gateway.send_back(self.group, msg, delay_level, self.config.max_reconsume_times)
        except GatewayError:
            return None

    def owned_queues(self) -> frozenset[MessageQueue]:
        return frozenset(self.rebalance.process_queue_table)

    # -- the end -------------------------------------------------------------------------------
    def shutdown(self) -> None:
        """Graceful: stop consuming, persist offsets, give the queues up, unregister (seed 001 §6.3)."""
        if not self.running:
            return
        self.consume_service.shutdown()
        self.offset_store.persist_all(frozenset(self.rebalance.process_queue_table))
        self.running = False
        self.rebalance.drop_all("shutdown")
        self.instance.unregister_consumer(self.group)
        self.rec.record("UNSUBSCRIBE", group=self.group, client_id=self.client_id)
        if not self.instance.consumer_table:
            self.instance.shutdown()
