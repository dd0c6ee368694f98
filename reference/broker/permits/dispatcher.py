"""Dispatchers: send a subscription's messages to its consumers within their permits (seed 003).

Theory of operation
-------------------
``read_more`` is Pulsar's ``readMoreEntries``: while a consumer that may receive has permits (more than 0)
and there is something to send, read for it and send, subtracting one permit per *message* (a batch entry of
n messages costs n). It runs after every FLOW, every arrival, every redelivery request and every change of
consumers, so a consumer with permits is never left waiting while messages are there (no freeze).

Batch entries are never split (pulsar-binary §9.3 rule 3, seed 003's ``sendMessages`` sends whole entries):
an entry of n messages read with fewer than n permits left is sent whole and the permits go negative; the
consumer then gets nothing more until its FLOWs bring them above 0 again (FLOW-2). The reference is stricter
than Java in one respect (FLOW-11, profile strict): it never *starts* an entry at 0 permits or below, so it
overshoots by at most the size of the last entry minus one, where Java reads up to ``min(permits, 100)``
entries at once and may overshoot by whole entries.

* :class:`SingleActiveConsumerDispatcher` (exclusive, failover): only the *active* consumer gets
  messages, the one with the smallest client id. When the active consumer changes, or asks for
  redelivery, the cursor rewinds to the mark-delete position and every unacknowledged message is
  sent again. Redeliveries here carry redelivery count 0 (tracking disabled, as in Java).
* :class:`MultipleConsumersDispatcher` (shared): consumers take turns. A redelivery request, or a
  consumer leaving, puts its pending messages on the *replay* list, which is sent before new
  messages, to any consumer with permits; the redelivery tracker counts each such redelivery.

Already-delivered messages give no permits back (not on ack, not on redelivery); redelivered
messages take permits again (pulsar-binary §9.3 rule 4).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from reference.broker.permits.batch import entry_bodies
from reference.broker.permits.consumer import PermitConsumer
from reference.broker.permits.cursor import EntryRead, ManagedCursor
from reference.broker.permits.entry_filter import EntryKind, classify, deliver_at
from reference.broker.permits.limits import DispatchRateLimiter, PermitLimits
from reference.broker.permits.protocol import DispatchedMessage, Position
from reference.broker.permits.redelivery import DisabledRedeliveryTracker, InMemoryRedeliveryTracker
from reference.clock import Clock


class Subscription(Protocol):
    """What a dispatcher needs of the subscription it serves (the service's ``Subscription``): its queue,
    its cursor, and where a sent message is recorded. A protocol, so that the dispatcher does not import the
    service that builds it."""

    group: str
    topic: str
    queue_id: int
    cursor: ManagedCursor
    limits: PermitLimits
    clock: Clock

    def record_dispatch(self, consumer: PermitConsumer, m: DispatchedMessage) -> None: ...

#: Messages read for one consumer in one round of a shared dispatcher (Pulsar's readBatchSize, 100).
READ_BATCH_SIZE = 100


class PermitDispatcher:
    """What both dispatchers share: sending within permits, consumers, acks."""

    tracker_class: type[InMemoryRedeliveryTracker] = InMemoryRedeliveryTracker
    #: Whether delayed messages are held until their time (Pulsar: shared subscriptions only).
    track_delayed = False

    def __init__(self, subscription: Subscription) -> None:
        self.subscription = subscription
        self.cursor = subscription.cursor
        self.limits = subscription.limits
        self.clock = subscription.clock
        self.rate = DispatchRateLimiter(subscription.limits, subscription.clock)
        self.tracker = self.tracker_class()
        self.consumers: list[PermitConsumer] = []
        self._dispatching = False
        self._again = False

    # -- permits -------------------------------------------------------------------------------
    def permits_for(self, read: EntryRead) -> int:
        """Permits one sent entry costs: one per message sent from it."""
        return len(read.indices)

    def consumer_flow(self, consumer: PermitConsumer, permits: int) -> None:
        """CommandFlow: add incremental credit, then send what it allows."""
        consumer.permits += permits
        consumer.granted += permits
        self.read_more()

    # -- sending -------------------------------------------------------------------------------
    def read_more(self) -> None:
        """Send while possible; a call made while sending (a client granting permits from inside
        its delivery callback) makes the running loop go round again instead of nesting."""
        if self._dispatching:
            self._again = True
            return
        self._dispatching = True
        try:
            self._again = True
            while self._again:
                self._again = False
                self.dispatch_round()
        finally:
            self._dispatching = False

    def dispatch_round(self) -> None:
        raise NotImplementedError

    def rate_budget(self, budget: int) -> int:
        """``budget`` cut to what the dispatch rate allows now; when it allows nothing, a read is scheduled for
        later (seed 003 line 34: the read is skipped, not lost)."""
        available = self.rate.available()
        if available is None:
            return budget
        if available <= 0:
            self.rate.retry_later(self.read_more)
        return min(budget, available)

    # -- entry filtering (seed 003 lines 41-51) ------------------------------------------------
    def admit(self, reads: Iterable[EntryRead]) -> list[EntryRead]:
        """The reads that may be sent: corrupt entries and markers are acknowledged for the subscription and
        dropped, delayed ones held (:meth:`hold`); none of them costs a permit."""
        out: list[EntryRead] = []
        now = self.clock.now_ms()
        for read in reads:
            message = read.message
            kind = classify(message.body, message.properties, now, self.track_delayed)
            if kind is EntryKind.DISPATCH:
                out.append(read)
            elif kind is EntryKind.DELAYED:
                self.hold(read)
            else:
                for index in read.indices:
                    position = Position(message.queue_offset, index)
                    if self.cursor.ack(position):
                        self.acknowledged(position)
        return out

    def hold(self, read: EntryRead) -> None:
        """A delayed entry read before its time (only dispatchers that track delayed messages get here)."""
        raise NotImplementedError

    def send(self, consumer: PermitConsumer, reads: Iterable[EntryRead]) -> None:
        """Send ``reads`` to ``consumer`` (sendMessages), charging permits and noting them pending."""
        sub = self.subscription
        out: list[DispatchedMessage] = []
        for read in reads:
            message = read.message
            bodies = entry_bodies(message.body, message.properties)
            for index in read.indices:
                position = Position(message.queue_offset, index)
                count = self.tracker.increment_and_get(position) if self.tracker.contains(position) else 0
                msg_id = message.unique_id if read.size == 1 else f"{message.unique_id}#{index}"
                out.append(
                    DispatchedMessage(
                        sub.topic, sub.queue_id, position, read.size, msg_id, bodies[index], message.tags, count
                    )
                )
                consumer.pending[position] = read.size
            consumer.permits -= self.permits_for(read)
        if not out:
            return
        self.rate.spend(len(out))
        consumer.dispatched += len(out)
        for m in out:
            sub.record_dispatch(consumer, m)
        consumer.channel.deliver_messages(sub.group, sub.topic, out)

    # -- acks and consumers --------------------------------------------------------------------
    def acknowledged(self, position: Position) -> None:
        """A message was acknowledged: it is nobody's pending message and needs no redelivery."""
        for consumer in self.consumers:
            consumer.pending.pop(position, None)
        self.tracker.remove(position)

    def add_consumer(self, consumer: PermitConsumer) -> None:
        raise NotImplementedError

    def remove_consumer(self, consumer: PermitConsumer) -> None:
        raise NotImplementedError

    def redeliver(self, consumer: PermitConsumer, positions: list[Position] | None) -> None:
        raise NotImplementedError


class SingleActiveConsumerDispatcher(PermitDispatcher):
    """PersistentDispatcherSingleActiveConsumer (exclusive and failover subscriptions)."""

    tracker_class = DisabledRedeliveryTracker

    @property
    def active(self) -> PermitConsumer | None:
        return min(self.consumers, key=lambda c: c.client_id) if self.consumers else None

    def add_consumer(self, consumer: PermitConsumer) -> None:
        before = self.active
        self.consumers.append(consumer)
        if before is not None and self.active is not before:
            self._switch_active(before)
        self.read_more()

    def remove_consumer(self, consumer: PermitConsumer) -> None:
        was_active = consumer is self.active
        self.consumers.remove(consumer)
        if was_active:
            self._switch_active(consumer)
        self.read_more()

    def _switch_active(self, previous: PermitConsumer) -> None:
        """A new consumer is active: what the previous one did not acknowledge is sent again."""
        previous.pending.clear()
        self.cursor.rewind()

    def redeliver(self, consumer: PermitConsumer, positions: list[Position] | None) -> None:
        """Exclusive and failover redelivery is always "everything unacknowledged": a rewind."""
        if consumer is not self.active:
            return
        consumer.pending.clear()
        self.cursor.rewind()
        self.read_more()

    def dispatch_round(self) -> None:
        while True:
            consumer = self.active
            if consumer is None or consumer.permits <= 0:
                return
            budget = self.rate_budget(consumer.permits) if self.cursor.has_new() else consumer.permits
            if budget <= 0:
                return
            reads = self.cursor.read_new(budget)
            if not reads:
                return
            self.send(consumer, self.admit(reads))


class MultipleConsumersDispatcher(PermitDispatcher):
    """PersistentDispatcherMultipleConsumers (shared subscriptions)."""

    tracker_class = InMemoryRedeliveryTracker
    track_delayed = True

    def __init__(self, subscription: Subscription) -> None:
        super().__init__(subscription)
        self.replay: set[Position] = set()
        #: Delayed messages read before their time: position -> deliver-at (ms).
        self.delayed: dict[Position, int] = {}
        self._next = 0

    def hold(self, read: EntryRead) -> None:
        """Keep a delayed entry's messages aside and put them on the replay list when their time comes."""
        due = deliver_at(read.message.properties) or 0
        for index in read.indices:
            self.delayed[Position(read.message.queue_offset, index)] = due
        self.clock.call_later(max(due - self.clock.now_ms(), 0), self._release_due)

    def _release_due(self) -> None:
        now = self.clock.now_ms()
        for position in [p for p, due in self.delayed.items() if due <= now]:
            del self.delayed[position]
            if not self.cursor.is_acked(position):
                self.replay.add(position)
        self.read_more()

    def add_consumer(self, consumer: PermitConsumer) -> None:
        self.consumers.append(consumer)
        self.read_more()

    def remove_consumer(self, consumer: PermitConsumer) -> None:
        self.consumers.remove(consumer)
        self._to_replay(consumer, list(consumer.pending))
        self.read_more()

    def redeliver(self, consumer: PermitConsumer, positions: list[Position] | None) -> None:
        """Put the named (or all) pending messages of ``consumer`` on the replay list; positions not
        pending on it are ignored."""
        self._to_replay(consumer, list(consumer.pending) if positions is None else positions)
        self.read_more()

    def _to_replay(self, consumer: PermitConsumer, positions: list[Position]) -> None:
        for position in positions:
            if consumer.pending.pop(position, None) is not None:
                self.replay.add(position)
                self.tracker.add_if_absent(position)

    def acknowledged(self, position: Position) -> None:
        super().acknowledged(position)
        self.replay.discard(position)
        self.delayed.pop(position, None)
        if any(c.blocked for c in self.consumers):  # an ack may release a consumer held on unacked messages
            self.read_more()

    def _blocked(self, consumer: PermitConsumer) -> bool:
        """maxUnackedMessagesPerConsumer: blocked at the limit, released at half of it."""
        unacked = len(consumer.pending)
        if consumer.blocked and self.limits.releases(unacked):
            consumer.blocked = False
        elif not consumer.blocked and self.limits.blocks(unacked):
            consumer.blocked = True
        return consumer.blocked

    def _next_consumer(self) -> PermitConsumer | None:
        """Round robin over the consumers that have permits and are not blocked on unacknowledged messages."""
        n = len(self.consumers)
        for step in range(n):
            consumer = self.consumers[(self._next + step) % n]
            if consumer.permits > 0 and not self._blocked(consumer):
                self._next = (self._next + step + 1) % n
                return consumer
        return None

    def dispatch_round(self) -> None:
        while True:
            consumer = self._next_consumer()
            if consumer is None:
                return
            budget = min(consumer.permits, READ_BATCH_SIZE)
            room = self.limits.unacked_room(len(consumer.pending))
            if room is not None:
                budget = min(budget, room)
            if self.replay or self.cursor.has_new():
                budget = self.rate_budget(budget)
            if budget <= 0:
                return
            reads = self._read_replay(budget) if self.replay else []
            if not reads:  # the replay list is empty now (what was on it was acknowledged)
                reads = self.cursor.read_new(budget)
            if not reads:
                return
            self.send(consumer, self.admit(reads))
            self._blocked(consumer)

    def _read_replay(self, budget: int) -> list[EntryRead]:
        """Up to ``budget`` messages of the replay list, oldest first (acknowledged ones dropped)."""
        chosen: dict[int, list[int]] = {}
        taken = 0
        for position in sorted(self.replay):
            if taken >= budget:
                break
            self.replay.discard(position)
            if self.cursor.is_acked(position):
                continue
            chosen.setdefault(position.offset, []).append(position.batch_index)
            taken += 1
        reads = []
        for offset, indices in sorted(chosen.items()):
            entry = self.cursor.read_entry(offset)
            if entry is not None:
                reads.append(EntryRead(entry[0], entry[1], tuple(indices)))
        return reads
