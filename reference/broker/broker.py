"""Broker: wires the store, offsets, pull processor, hold service and consumer registry together,
with the POP side (``reference.broker.pop``) and permit flow control (``reference.broker.permits``).

This is the one object a transport, a target or the simulator drives. Everything is single-threaded
and driven by the :class:`~reference.clock.Clock` given at construction: ``start()`` schedules the
periodic services (hold check, channel expiry, retention, offset persistence) as clock timers.

Every accepted operation records a trace event (schema v1) under the source ``broker:<name>``.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from reference.allocation.message_queue import MessageQueue
from reference.broker.config import BrokerConfig
from reference.broker.consumer_manage_processor import ConsumerManageProcessor
from reference.broker.consumer_manager import ClientChannelInfo, ConsumerManager
from reference.broker.delay import delay_level
from reference.broker.hold_service import PullRequestHoldService
from reference.broker.permits.dispatcher import MultipleConsumersDispatcher, SingleActiveConsumerDispatcher
from reference.broker.permits.protocol import InitialPosition, PermitChannel, Position, SubType
from reference.broker.permits.service import PermitService
from reference.broker.pop.ack import AckMessageProcessor
from reference.broker.pop.buffer import PopBufferMergeService
from reference.broker.pop.config import PopConfig
from reference.broker.pop.processor import PopMessageProcessor
from reference.broker.pop.protocol import (
    AckResult,
    ChangeInvisibleResult,
    PopChannel,
    PopMessageRequest,
    PopResponse,
)
from reference.broker.pop.revive import PopReviveService
from reference.broker.pop.service import PopService
from reference.broker.protocol import (
    Channel,
    ConsumerData,
    PullMessageRequest,
    PullResponse,
    QueryOffsetResult,
    SendBackResult,
)
from reference.broker.pull_processor import HeldPullRequest, PullMessageProcessor, PullOutcome
from reference.broker.send_back import ConsumerSendMsgBackProcessor
from reference.broker.subscription_groups import SubscriptionGroupManager
from reference.broker.topic_perm import TopicPermTable
from reference.broker.transaction import TransactionalMessageService, is_half
from reference.clock import Clock
from reference.rules.codes import ResponseCode
from reference.rules.errors import InvalidRequest, require
from reference.rules.filter import SubscriptionData
from reference.rules.topics import PROPERTY_REAL_QUEUE_ID, PROPERTY_REAL_TOPIC, SCHEDULE_TOPIC
from reference.store.config import MessageStoreConfig
from reference.store.message import Message, PutMessageResult, StoredMessage
from reference.store.offsets import ConsumerOffsetManager
from reference.store.store import MessageStore
from reference.trace import NULL_TRACE, Trace


@dataclass(frozen=True)
class BrokerComponents:
    """The one registry of the classes a broker is built from, its POP and permit parts included: a seeded
    fault (conformance.mutants) swaps one here and the broker hands it to the service that builds it."""

    pull_processor: type[PullMessageProcessor] = PullMessageProcessor
    hold_service: type[PullRequestHoldService] = PullRequestHoldService
    consumer_manager: type[ConsumerManager] = ConsumerManager
    message_store: type[MessageStore] = MessageStore
    consumer_manage_processor: type[ConsumerManageProcessor] = ConsumerManageProcessor
    pop_processor: type[PopMessageProcessor] = PopMessageProcessor
    pop_buffer: type[PopBufferMergeService] = PopBufferMergeService
    pop_revive: type[PopReviveService] = PopReviveService
    pop_acks: type[AckMessageProcessor] = AckMessageProcessor
    single_active_dispatcher: type[SingleActiveConsumerDispatcher] = SingleActiveConsumerDispatcher
    multiple_consumers_dispatcher: type[MultipleConsumersDispatcher] = MultipleConsumersDispatcher


class Broker:
    def __init__(
        self,
        data_dir: str | Path,
        clock: Clock,
        config: BrokerConfig | None = None,
        store_config: MessageStoreConfig | None = None,
        trace: Trace | None = None,
        components: BrokerComponents | None = None,
        pop_config: PopConfig | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config or BrokerConfig()
        self.clock = clock
        self.data_dir = Path(data_dir)
        components = components or BrokerComponents()
        self.trace = trace or NULL_TRACE
        self.rec = self.trace.source(f"broker:{self.config.broker_name}", clock)
        self.store = components.message_store(self.data_dir, store_config, clock)
        self.offsets = ConsumerOffsetManager(self.data_dir / "config" / "consumerOffset.json", clock)
        self.consumer_manager = components.consumer_manager(self.config, clock, self._on_registry_event)
        self.pull_processor = components.pull_processor(
            self.store, self.offsets, self.config, clock,
            self.consumer_manager.find_subscription_data, self._on_piggyback_commit,
        )
        self.hold_service = components.hold_service(self.store, self.config, clock, self._wake_held)
        self.consumer_manage_processor = components.consumer_manage_processor(self.store, self.offsets)
        self.store.add_retention_listener(self._on_retention)
        # Subscription groups (mqadmin updateSubGroup / deleteSubGroup; created on first use while auto-creation is on).
        self.subscription_groups = SubscriptionGroupManager(
            self.data_dir, lambda: self.config.auto_create_subscription_group
        )
        # POP (seed 004); rng draws the pop's random start queue and 1-in-5 retry choice.
        self.pop_service = PopService(
            self.store, self.offsets, self.consumer_manager, self.config.broker_name, pop_config or PopConfig(),
            clock, rng or random.Random(0), self.rec,
            processor=components.pop_processor, buffer=components.pop_buffer, revive=components.pop_revive,
            acks=components.pop_acks, group_exists=self.subscription_groups.exists,
        )
        # Permit flow control (seed 003).
        self.permits = PermitService(
            self.store, self.offsets, self.config.broker_name, self.rec, clock,
            single_active=components.single_active_dispatcher, multiple=components.multiple_consumers_dispatcher,
        )
        self.send_back_processor = ConsumerSendMsgBackProcessor(
            self.store, self.data_dir / "config" / "delayOffset.json", clock
        )
        # Topic permissions (mqadmin updateTopicPerm), delay levels on send and transactions (issue 41).
        self.topic_perms = TopicPermTable(self.data_dir / "config" / "topicPerm.json")
        self.transactions = TransactionalMessageService(self.store, clock, self._put_and_record)
        self._client_of_channel: dict[str, str] = {}
        self._started = False

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        """Start the periodic services on the clock (idempotent)."""
        if self._started:
            return
        self._started = True
        self.hold_service.start()
        self.consumer_manager.start()
        self.store.start_periodic()
        self.offsets.start_periodic()
        self.send_back_processor.start()
        self.transactions.start()
        self.pop_service.start()

    def shutdown(self) -> None:
        """Persist offsets and close the store. Held pulls are dropped (their clients time out). A broker
        already shut down stays so (its store is closed and refuses everything)."""
        if self.store.closed:
            return
        self.pop_service.shutdown()
        self.hold_service.shutdown()
        self.consumer_manager.shutdown()
        self.send_back_processor.shutdown()
        self.transactions.shutdown()
        self.subscription_groups.shutdown()
        self.offsets.persist()
        self.offsets.shutdown()
        self.store.close()

    # -- admin ---------------------------------------------------------------------------------
    def create_topic(self, topic: str, queue_nums: int) -> None:
        self.store.create_topic(topic, queue_nums)

    def delete_topic(self, topic: str) -> None:
        """DELETE_TOPIC_IN_BROKER (``mqadmin deleteTopic``): the topic is gone; deleting a topic that does not
        exist is no error, as in RocketMQ."""
        self.store.delete_topic(topic)
        self.topic_perms.forget(topic)

    def run_retention(self, manual: bool = False) -> None:
        """Run the store's clean service now; ``manual`` asks for deletion regardless of the hour."""
        if manual:
            self.store.request_manual_delete()
        self.store.run_retention()

    # -- produce -------------------------------------------------------------------------------
    def send(self, message: Message, producer: str = "") -> PutMessageResult:
        """A producer's send: refused without WRITE perm; a half message (``TRAN_MSG``) waits for its
        END_TRANSACTION (reference.broker.transaction) and is traced when committed; a delay level goes through
        the schedule topic and is traced there (SEND on SCHEDULE_TOPIC_XXXX, the real topic in its detail)."""
        self.topic_perms.check_writable(message.topic)
        if is_half(message.properties):
            return self.transactions.prepare(message)
        return self._put_and_record(message, producer)

    def _put_and_record(self, message: Message, producer: str = "") -> PutMessageResult:
        result = self._put(message)
        level = delay_level(message.properties)
        detail: dict[str, object] = {"producer": producer} if producer else {}
        if level:
            detail.update(real_topic=message.topic, delay_level=level)
        self.rec.record(
            "SEND", topic=SCHEDULE_TOPIC if level else message.topic, broker=self.config.broker_name,
            queue_id=result.queue_id, offset=result.queue_offset, msg_id=result.unique_id, tags=message.tags or "",
            detail=detail or None,
        )
        return result

    def _put(self, message: Message) -> PutMessageResult:
        """Store ``message``, or, with a delay level, its copy in the schedule topic (reference.broker.delay)."""
        level = delay_level(message.properties)
        if level == 0:
            return self.store.put_message(message)
        props = dict(message.properties)
        props[PROPERTY_REAL_TOPIC] = message.topic
        props[PROPERTY_REAL_QUEUE_ID] = str(message.queue_id)
        self.store.queue_nums(message.topic)  # TOPIC_NOT_EXIST before anything is scheduled
        return self.send_back_processor.schedule_service.schedule_message(
            dataclasses.replace(message, properties=props), level)

    def send_back(
        self, group: str, message: StoredMessage, delay_level: int = 0, max_reconsume_times: int = 16
    ) -> SendBackResult:
        """consumerSendMessageBack: store a retry (or dead-letter) copy; see reference.broker.send_back."""
        return self.send_back_processor.send_back(group, message, delay_level, max_reconsume_times)

    # -- POP (reference.broker.pop) -------------------------------------------------------------
    def query_assignment(
        self, topic: str, group: str, client_id: str, strategy_name: str = "AllocateMessageQueueAveragely",
        message_model: str = "CLUSTERING", pop_share_queue_num: int = -1, mode: str = "POP",
    ) -> list[MessageQueue]:
        return self.pop_service.query_assignment(
            topic, group, client_id, strategy_name, message_model, pop_share_queue_num, mode
        )

    def pop(self, request: PopMessageRequest, channel: PopChannel) -> PopResponse | None:
        """Answer a pop now, or hold it (None) and answer later through ``channel.deliver_pop``."""
        return self.pop_service.pop(request, channel)

    def ack(self, group: str, topic: str, handle: str, client_id: str = "") -> AckResult:
        return self.pop_service.ack(group, topic, handle, client_id)

    def change_invisible_time(
        self, group: str, topic: str, handle: str, invisible_time_ms: int, client_id: str = ""
    ) -> ChangeInvisibleResult:
        return self.pop_service.change_invisible_time(group, topic, handle, invisible_time_ms, client_id)

    # -- permits (reference.broker.permits) ----------------------------------------------------
    def subscribe_permits(
        self, group: str, topic: str, client_id: str, channel: PermitChannel, sub_type: SubType | str = "Exclusive",
        queue_id: int = 0, initial_position: InitialPosition = InitialPosition.LATEST,
    ) -> None:
        self.permits.subscribe(group, topic, client_id, channel, sub_type, queue_id, initial_position)

    def flow(self, group: str, client_id: str, topic: str, permits: int) -> None:
        self.permits.flow(group, client_id, topic, permits)

    def ack_permits(self, group: str, client_id: str, topic: str, positions: list[Position]) -> int:
        return self.permits.ack(group, client_id, topic, positions)

    def redeliver_unacknowledged(
        self, group: str, client_id: str, topic: str, positions: list[Position] | None = None
    ) -> None:
        self.permits.redeliver_unacknowledged(group, client_id, topic, positions)

    def close_permit_consumer(self, group: str, client_id: str, topic: str) -> None:
        self.permits.close_consumer(group, client_id, topic)

    # -- pull ----------------------------------------------------------------------------------
    def pull(self, request: PullMessageRequest, channel: Channel,
             race: Callable[[], object] | None = None) -> PullResponse | None:
        """Answer a pull now, or hold it (None) and answer later through ``channel.deliver_pull``. ``race`` runs
        after the lookup found nothing and before the request is held: the interleaving of RocketMQ issue #7358
        (messages stored in between), which a runner's race control places on purpose (capability
        ``race_control``)."""
        subscription = self.pull_processor.validate(request)
        polling = self.pull_processor.hold_time_ms(request)
        self.rec.record(
            "PULL_REQ", group=request.consumer_group, client_id=self._client_id(request, channel),
            topic=request.topic, broker=self.config.broker_name, queue_id=request.queue_id,
            offset=request.queue_offset, max_nums=request.max_msg_nums, suspend_ms=polling,
            detail={"asked_suspend_ms": request.suspend_timeout_ms} if polling != request.suspend_timeout_ms
            and request.has_suspend else None,
        )
        outcome = self.pull_processor.process_request(request, channel, True, subscription)
        if outcome.held is not None:
            if race is not None:
                race()
            self.hold_service.suspend_pull_request(outcome.held)
            return None
        assert outcome.response is not None
        self._record_pull_resp(request, channel, outcome.response)
        return outcome.response

    def _wake_held(self, held: HeldPullRequest) -> None:
        """Re-execute a held request with suspending forbidden and deliver the answer."""
        try:
            outcome = self.pull_processor.process_request(held.request, held.channel, broker_allow_suspend=False)
        except InvalidRequest as exc:
            # Valid when held, refused now (its group's subscription is gone): answer with the refusal,
            # as RocketMQ's re-executed processRequest does, instead of raising into whoever woke it.
            code = ResponseCode.__members__.get(exc.code, ResponseCode.SYSTEM_ERROR)
            outcome = PullOutcome(PullResponse(code, None, held.request.queue_offset, 0, 0, remark=str(exc)))
        assert outcome.response is not None
        held_ms = self.clock.now_ms() - held.suspend_timestamp
        response = dataclasses.replace(outcome.response, held_ms=held_ms)
        self._record_pull_resp(held.request, held.channel, response)
        held.channel.deliver_pull(held.request, response)

    def _record_pull_resp(self, request: PullMessageRequest, channel: Channel, response: PullResponse) -> None:
        self.rec.record(
            "PULL_RESP", group=request.consumer_group, client_id=self._client_id(request, channel),
            topic=request.topic, broker=self.config.broker_name, queue_id=request.queue_id,
            offset=request.queue_offset, status=response.status.name if response.status else response.code.name,
            next_offset=response.next_begin_offset, min_offset=response.min_offset,
            max_offset=response.max_offset, count=len(response.messages), held_ms=response.held_ms,
            detail={"code": response.code.name},
        )

    # -- offsets -------------------------------------------------------------------------------
    def query_consumer_offset(self, group: str, topic: str, queue_id: int) -> QueryOffsetResult:
        """Seed 000, queryConsumerOffset (the rule is ConsumerManageProcessor's)."""
        self._check_queue(group, topic, queue_id)
        return self.consumer_manage_processor.query_consumer_offset(group, topic, queue_id)

    def update_consumer_offset(self, group: str, topic: str, queue_id: int, offset: int, client_id: str = "") -> None:
        self._check_queue(group, topic, queue_id)
        require(offset >= 0, "commitOffset", "must be >= 0")
        self.offsets.commit_offset(group, topic, queue_id, offset)
        self._on_piggyback_commit(group, client_id, topic, queue_id, offset)

    def _check_queue(self, group: str, topic: str, queue_id: int) -> None:
        require(bool(group), "consumerGroup", "must be a non-empty group name")
        nums = self.store.queue_nums(topic)
        require(0 <= queue_id < nums, "queueId", f"must be in [0, {nums}) for topic {topic!r}")

    def _on_piggyback_commit(self, group: str, client_id: str, topic: str, queue_id: int, offset: int) -> None:
        self.rec.record(
            "COMMIT", group=group, client_id=client_id, topic=topic, broker=self.config.broker_name,
            queue_id=queue_id, offset=offset,
        )

    # -- consumer registry ---------------------------------------------------------------------
    def heartbeat(self, channel: Channel, client_id: str, consumers: list[ConsumerData]) -> bool:
        """Register every group of a heartbeat; True when any group changed."""
        require(bool(client_id), "clientID", "must be a non-empty client id")
        for data in consumers:
            data.validate()
        self._client_of_channel[channel.key] = client_id
        changed = False
        for data in consumers:
            self.subscription_groups.find(data.group)  # upstream heartBeat: created on first use if auto-creation is on
            changed |= self.consumer_manager.register_consumer(ClientChannelInfo(channel, client_id), data)
        return changed

    def unregister_client(self, channel: Channel, group: str) -> bool:
        require(bool(group), "consumerGroup", "must be a non-empty group name")
        return self.consumer_manager.unregister_consumer(group, channel)

    def channel_closed(self, channel: Channel) -> None:
        self.consumer_manager.do_channel_close_event(channel)
        self._client_of_channel.pop(channel.key, None)

    def consumer_ids(self, group: str) -> list[str]:
        return self.consumer_manager.consumer_ids(group)

    def _client_id(self, request: PullMessageRequest, channel: Channel) -> str:
        return request.client_id or self._client_of_channel.get(channel.key, channel.key)

    def _on_registry_event(
        self, event: str, group: str, client_id: str, subs: tuple[SubscriptionData, ...], model: str
    ) -> None:
        if event == "SUBSCRIBE":
            for sub in subs:
                self.rec.record(
                    "SUBSCRIBE", group=group, client_id=client_id, topic=sub.topic,
                    expression=sub.expression, model=model,
                )
        else:
            self.rec.record("UNSUBSCRIBE", group=group, client_id=client_id)

    def _on_retention(self, topic: str, queue_id: int, min_offset: int) -> None:
        self.rec.record(
            "RETENTION", topic=topic, broker=self.config.broker_name, queue_id=queue_id, min_offset=min_offset
        )
