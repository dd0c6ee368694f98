"""PermitService: subscriptions, consumers and their commands (Pulsar's SUBSCRIBE, FLOW, ACK,
REDELIVER_UNACKNOWLEDGED_MESSAGES, CLOSE_CONSUMER), on the reference store.

A subscription belongs to a consumer group (Pulsar's subscription name) and one queue of a topic (a
Pulsar topic or partition); its cursor is durable: created at the queue's end (Latest) or start
(Earliest) and committed through the broker's consumer offsets. Consumers are identified by their
client id within a subscription.

Refusals, each with nothing changed: a FLOW with permits outside [1, 2^32 - 1] (INVALID_PERMITS),
a command for a consumer that is not subscribed (CONSUMER_NOT_FOUND), a second consumer on an
exclusive subscription or a client id already subscribed (CONSUMER_BUSY), a subscribe with another
type or queue than the subscription has (SUBSCRIPTION_MISMATCH).

Trace rows: FLOW (count = the permits granted) and DISPATCH (one per message sent).
"""

from __future__ import annotations

from reference.broker.permits.consumer import PermitConsumer
from reference.broker.permits.cursor import ManagedCursor
from reference.broker.permits.dispatcher import (
    MultipleConsumersDispatcher,
    PermitDispatcher,
    SingleActiveConsumerDispatcher,
)
from reference.broker.permits.limits import PermitLimits
from reference.broker.permits.protocol import (
    DispatchedMessage,
    InitialPosition,
    PermitChannel,
    Position,
    SubType,
)
from reference.clock import Clock
from reference.rules.errors import InvalidRequest, require
from reference.store.names import check_name
from reference.store.offsets import ConsumerOffsetManager
from reference.store.store import MessageStore
from reference.trace import SourceRecorder

#: FLOW's messagePermits is a uint32 on the wire; zero and negative credit are refused (Java does).
MAX_PERMITS = 0xFFFFFFFF
INVALID_PERMITS = "INVALID_PERMITS"
CONSUMER_NOT_FOUND = "CONSUMER_NOT_FOUND"
CONSUMER_BUSY = "CONSUMER_BUSY"
SUBSCRIPTION_MISMATCH = "SUBSCRIPTION_MISMATCH"


class Subscription:
    def __init__(
        self,
        service: PermitService,
        group: str,
        topic: str,
        queue_id: int,
        sub_type: SubType,
        mark_delete: int,
        dispatcher: type[PermitDispatcher],
    ) -> None:
        self.service = service
        self.group = group
        self.topic = topic
        self.queue_id = queue_id
        self.sub_type = sub_type
        self.limits = service.limits
        self.clock = service.clock
        self.cursor = ManagedCursor(service.store, group, topic, queue_id, mark_delete, self._commit)
        self.dispatcher: PermitDispatcher = dispatcher(self)

    def _commit(self, mark_delete: int) -> None:
        self.service.offsets.commit_offset(self.group, self.topic, self.queue_id, mark_delete)

    def consumer(self, client_id: str) -> PermitConsumer | None:
        for consumer in self.dispatcher.consumers:
            if consumer.client_id == client_id:
                return consumer
        return None

    def record_dispatch(self, consumer: PermitConsumer, m: DispatchedMessage) -> None:
        self.service.rec.record(
            "DISPATCH", group=self.group, client_id=consumer.client_id, topic=self.topic,
            broker=self.service.broker_name, queue_id=self.queue_id, msg_id=m.msg_id, offset=m.position.offset,
            detail={
                "batch_index": m.position.batch_index, "batch_size": m.batch_size,
                "redelivery_count": m.redelivery_count, "permits": consumer.permits,
            },
        )


class PermitService:
    def __init__(
        self,
        store: MessageStore,
        offsets: ConsumerOffsetManager,
        broker_name: str,
        rec: SourceRecorder,
        clock: Clock,
        *,
        limits: PermitLimits | None = None,
        single_active: type[SingleActiveConsumerDispatcher] = SingleActiveConsumerDispatcher,
        multiple: type[MultipleConsumersDispatcher] = MultipleConsumersDispatcher,
    ) -> None:
        """The dispatcher classes are the broker's components (``BrokerComponents.*_dispatcher``): a seeded
        fault swaps one there, and the broker hands them on. ``limits``: the dispatch rate and unacknowledged-message
        limits (:mod:`.limits`), upstream's defaults unless given; :meth:`change_limits` changes them live."""
        self.store = store
        self.clock = clock
        self.limits = limits or PermitLimits()
        self.offsets = offsets
        self.broker_name = broker_name
        self.rec = rec
        self.single_active = single_active
        self.multiple = multiple
        self.subscriptions: dict[tuple[str, str], Subscription] = {}
        store.add_arrival_listener(self._on_arrival)

    def _dispatcher(self, sub_type: SubType) -> type[PermitDispatcher]:
        """Shared subscriptions spread entries over their consumers; the others feed one active consumer."""
        return self.multiple if sub_type is SubType.SHARED else self.single_active

    def change_limits(self, settings: dict[str, object]) -> dict[str, int]:
        """Change dispatch limits by Pulsar's setting names; every subscription
        uses the new values from its next read. Returns the values they replaced (InvalidRequest naming a bad one)."""
        previous = self.limits.change(settings)
        for sub in self.subscriptions.values():
            sub.dispatcher.read_more()
        return previous

    # -- commands ------------------------------------------------------------------------------
    def subscribe(
        self,
        group: str,
        topic: str,
        client_id: str,
        channel: PermitChannel,
        sub_type: SubType | str = SubType.EXCLUSIVE,
        queue_id: int = 0,
        initial_position: InitialPosition = InitialPosition.LATEST,
    ) -> PermitConsumer:
        """Attach a consumer (with 0 permits); creates the subscription on first use."""
        check_name(group, "subscription")
        require(isinstance(client_id, str) and bool(client_id), "consumerName", "must be a non-empty client id")
        if not isinstance(sub_type, SubType):
            try:
                sub_type = SubType.parse(sub_type)
            except ValueError:
                raise InvalidRequest(
                    "subType", f"must be one of {[t.value for t in SubType]}, got {sub_type!r}"
                ) from None
        nums = self.store.queue_nums(topic)
        require(isinstance(queue_id, int) and 0 <= queue_id < nums, "queueId", f"must be in [0, {nums})")
        sub = self.subscriptions.get((group, topic))
        if sub is not None:
            require(
                sub.sub_type is sub_type and sub.queue_id == queue_id, "subType",
                f"subscription {group!r} is {sub.sub_type.value} on queue {sub.queue_id}", SUBSCRIPTION_MISMATCH,
            )
            require(sub.consumer(client_id) is None, "consumerName", f"{client_id!r} is already subscribed",
                    CONSUMER_BUSY)
            require(
                sub.sub_type is not SubType.EXCLUSIVE or not sub.dispatcher.consumers, "subType",
                f"exclusive subscription {group!r} already has a consumer", CONSUMER_BUSY,
            )
        else:
            committed = self.offsets.query_offset(group, topic, queue_id)
            if committed < 0:
                committed = (
                    self.store.get_min_offset_in_queue(topic, queue_id)
                    if initial_position is InitialPosition.EARLIEST
                    else self.store.get_max_offset_in_queue(topic, queue_id)
                )
                self.offsets.commit_offset(group, topic, queue_id, committed)  # the subscription is durable
            sub = Subscription(self, group, topic, queue_id, sub_type, committed, self._dispatcher(sub_type))
            self.subscriptions[(group, topic)] = sub
        consumer = PermitConsumer(client_id, channel)
        sub.dispatcher.add_consumer(consumer)
        return consumer

    def flow(self, group: str, client_id: str, topic: str, permits: int) -> None:
        require(
            isinstance(permits, int) and not isinstance(permits, bool) and 1 <= permits <= MAX_PERMITS,
            "messagePermits", f"must be an integer in [1, {MAX_PERMITS}]", INVALID_PERMITS,
        )
        sub, consumer = self._consumer(group, client_id, topic)
        self.rec.record(
            "FLOW", group=group, client_id=client_id, topic=topic, count=permits, broker=self.broker_name,
            queue_id=sub.queue_id, detail={"permits_before": consumer.permits},
        )
        sub.dispatcher.consumer_flow(consumer, permits)

    def ack(self, group: str, client_id: str, topic: str, positions: list[Position]) -> int:
        """Acknowledge messages; returns how many were newly acknowledged. Positions never read, or
        already acknowledged, are ignored (as the Java broker ignores unknown ids)."""
        sub, _consumer = self._consumer(group, client_id, topic)
        done = 0
        for position in positions:
            position = Position(*position)
            if sub.cursor.was_read(position) and sub.cursor.ack(position):
                done += 1
                sub.dispatcher.acknowledged(position)
        return done

    def redeliver_unacknowledged(
        self, group: str, client_id: str, topic: str, positions: list[Position] | None = None
    ) -> None:
        sub, consumer = self._consumer(group, client_id, topic)
        sub.dispatcher.redeliver(consumer, None if positions is None else [Position(*p) for p in positions])

    def close_consumer(self, group: str, client_id: str, topic: str) -> None:
        """The consumer leaves; its unacknowledged messages go back for redelivery."""
        sub, consumer = self._consumer(group, client_id, topic)
        sub.dispatcher.remove_consumer(consumer)

    def consumer(self, group: str, client_id: str, topic: str) -> PermitConsumer:
        return self._consumer(group, client_id, topic)[1]

    def _consumer(self, group: str, client_id: str, topic: str) -> tuple[Subscription, PermitConsumer]:
        sub = self.subscriptions.get((group, topic))
        consumer = sub.consumer(client_id) if sub is not None else None
        if sub is None or consumer is None:
            raise InvalidRequest(
                "consumerName", f"{client_id!r} is not subscribed to {topic!r} as {group!r}", CONSUMER_NOT_FOUND
            )
        return sub, consumer

    def _on_arrival(self, topic: str, queue_id: int, max_offset: int, tags_code: int, store_timestamp: int) -> None:
        for sub in self.subscriptions.values():
            if sub.topic == topic and sub.queue_id == queue_id:
                sub.dispatcher.read_more()
