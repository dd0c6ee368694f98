"""InProcessGateway: a :class:`~reference.client.gateway.BrokerGateway` over an in-process Broker.

The broker is reached through a :class:`BrokerHost` (so it can be down or replaced by a restart) and
every message crosses a :class:`Link`. :class:`DirectLink` is the loss-free link of the in-process
target and of unit tests: a request reaches the broker at once and an answer comes back on the next
turn of the clock. The simulator supplies a link with latency, reordering and loss; the gateway's
logic (matching held answers to requests, consumer timeouts, refused connections) is the same.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable
from functools import partial
from typing import Protocol, TypeVar

from reference.broker.broker import Broker
from reference.broker.protocol import ConsumerData, PullMessageRequest, PullResponse, QueryOffsetResult, SendBackResult
from reference.client.gateway import GatewayError, IdsChangedListener, PullCallback
from reference.clock import Clock, TimerHandle
from reference.rules.errors import InvalidRequest
from reference.store.message import StoredMessage

T = TypeVar("T")

#: Synchronous-call faults a link may inject: the request never reached the broker, or the broker
#: acted and its reply was lost.
REQUEST_LOST = "REQUEST_LOST"
REPLY_LOST = "REPLY_LOST"


class BrokerHost(Protocol):
    """Where the broker currently is: ``broker`` is None while it is down."""

    @property
    def broker(self) -> Broker | None: ...


class StaticHost:
    """A broker that is always up."""

    def __init__(self, broker: Broker) -> None:
        self.broker: Broker | None = broker


class Link(Protocol):
    """One client's connection as the network treats it."""

    def to_broker(self, action: Callable[[], object]) -> None:
        """Run ``action`` when a request reaches the broker (or never, if it is lost)."""
        ...

    def to_client(self, action: Callable[[], object]) -> None:
        """Run ``action`` when an answer or notification reaches the client (or never). Never inline."""
        ...

    def sync_fault(self) -> str | None:
        """A fault for the next synchronous call: None, REQUEST_LOST or REPLY_LOST."""
        ...

    def unordered(self, items: list[str]) -> list[str]:
        """A list as received over the wire, whose order the protocol does not guarantee."""
        ...


class DirectLink:
    """No latency and no loss; answers are delivered on the clock's next turn."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock

    def to_broker(self, action: Callable[[], object]) -> None:
        action()

    def to_client(self, action: Callable[[], object]) -> None:
        self._clock.call_later(0, action)

    def sync_fault(self) -> str | None:
        return None

    def unordered(self, items: list[str]) -> list[str]:
        return items


class _GatewayChannel:
    """The broker's view of this connection (the ``Channel`` protocol)."""

    __slots__ = ("key", "_gateway")

    def __init__(self, key: str, gateway: InProcessGateway) -> None:
        self.key = key
        self._gateway = gateway

    def deliver_pull(self, request: PullMessageRequest, response: PullResponse) -> None:
        self._gateway._held_answer(request, response)

    def notify_consumer_ids_changed(self, group: str) -> None:
        self._gateway._notified(group)


class InProcessGateway:
    """``clock`` is the client's own clock (its consumer timeouts die with it); ``link`` carries
    everything between the client and ``host``'s broker."""

    def __init__(self, host: BrokerHost, clock: Clock, connection_key: str, link: Link | None = None,
                 broker_name: str = "broker-a") -> None:
        self.host = host
        self.clock = clock
        self.link: Link = link if link is not None else DirectLink(clock)
        self.broker_name = broker_name
        self.channel = _GatewayChannel(connection_key, self)
        self._opaque = itertools.count(1)
        self._pending: dict[int, tuple[PullCallback, TimerHandle]] = {}
        #: id(request) -> (request, opaque) for pulls the broker holds; the request is kept so its id
        #: stays unique while held.
        self._held: dict[int, tuple[PullMessageRequest, int]] = {}
        self._listener: IdsChangedListener | None = None
        self.closed = False

    # -- asynchronous --------------------------------------------------------------------------
    def pull(self, request: PullMessageRequest, callback: PullCallback, timeout_ms: int) -> None:
        opaque = next(self._opaque)
        timer = self.clock.call_later(timeout_ms, partial(self._timeout, opaque))
        self._pending[opaque] = (callback, timer)
        self.link.to_broker(partial(self._pull_at_broker, opaque, request))

    def _pull_at_broker(self, opaque: int, request: PullMessageRequest) -> None:
        broker = self.host.broker
        if broker is None:
            self._answer(opaque, None, GatewayError("CONNECTION_REFUSED", "the broker is down"))
            return
        try:
            response = broker.pull(request, self.channel)
        except InvalidRequest as exc:
            self._answer(opaque, None, GatewayError(exc.code, exc.rule))
            return
        if response is None:
            self._held[id(request)] = (request, opaque)
        else:
            self._answer(opaque, response, None)

    def _held_answer(self, request: PullMessageRequest, response: PullResponse) -> None:
        entry = self._held.pop(id(request), None)
        if entry is not None:
            self._answer(entry[1], response, None)

    def _answer(self, opaque: int, response: PullResponse | None, error: GatewayError | None) -> None:
        self.link.to_client(partial(self._complete, opaque, response, error))

    def _complete(self, opaque: int, response: PullResponse | None, error: GatewayError | None) -> None:
        entry = self._pending.pop(opaque, None)
        if entry is None or self.closed:
            return  # answered after its timeout (RocketMQ drops it), or the client is gone
        entry[1].cancel()
        entry[0](response, error)

    def _timeout(self, opaque: int) -> None:
        entry = self._pending.pop(opaque, None)
        if entry is not None and not self.closed:
            entry[0](None, GatewayError("TIMEOUT", "no answer within the consumer timeout"))

    def connection_lost(self) -> None:
        """The broker went away: every pull in flight fails now (its held state died with it)."""
        self._held.clear()
        for opaque in list(self._pending):
            self._answer(opaque, None, GatewayError("CONNECTION_CLOSED", "the broker closed the connection"))

    def update_offset(self, group: str, topic: str, queue_id: int, offset: int, client_id: str) -> None:
        self.link.to_broker(partial(self._update_at_broker, group, topic, queue_id, offset, client_id))

    def _update_at_broker(self, group: str, topic: str, queue_id: int, offset: int, client_id: str) -> None:
        broker = self.host.broker
        if broker is not None:
            with contextlib.suppress(InvalidRequest):  # oneway: nobody hears of a refusal
                broker.update_consumer_offset(group, topic, queue_id, offset, client_id)

    def _notified(self, group: str) -> None:
        if self._listener is not None and not self.closed:
            self.link.to_client(partial(self._deliver_notification, group))

    def _deliver_notification(self, group: str) -> None:
        if self._listener is not None and not self.closed:
            self._listener(group)

    def set_ids_changed_listener(self, listener: IdsChangedListener) -> None:
        self._listener = listener

    # -- synchronous ---------------------------------------------------------------------------
    def _sync(self, call: Callable[[Broker], T]) -> T:
        fault = self.link.sync_fault()
        if fault == REQUEST_LOST:
            raise GatewayError("TIMEOUT", "the request was lost")
        broker = self.host.broker
        if broker is None:
            raise GatewayError("CONNECTION_REFUSED", "the broker is down")
        try:
            result = call(broker)
        except InvalidRequest as exc:
            raise GatewayError(exc.code, exc.rule) from None
        if fault == REPLY_LOST:
            raise GatewayError("TIMEOUT", "the reply was lost")
        return result

    def query_offset(self, group: str, topic: str, queue_id: int) -> QueryOffsetResult:
        return self._sync(lambda b: b.query_consumer_offset(group, topic, queue_id))

    def heartbeat(self, client_id: str, consumers: list[ConsumerData]) -> None:
        self._sync(lambda b: b.heartbeat(self.channel, client_id, consumers))

    def unregister(self, client_id: str, group: str) -> None:
        self._sync(lambda b: b.unregister_client(self.channel, group))

    def consumer_ids(self, group: str) -> list[str]:
        return self.link.unordered(self._sync(lambda b: b.consumer_ids(group)))

    def send_back(
        self, group: str, message: StoredMessage, delay_level: int, max_reconsume_times: int
    ) -> SendBackResult:
        return self._sync(lambda b: b.send_back(group, message, delay_level, max_reconsume_times))

    def topic_queue_nums(self, topic: str) -> int | None:
        return self._sync(lambda b: b.store.topics().get(topic))

    def min_offset(self, topic: str, queue_id: int) -> int:
        return self._sync(lambda b: b.store.get_min_offset_in_queue(topic, queue_id))

    def max_offset(self, topic: str, queue_id: int) -> int:
        return self._sync(lambda b: b.store.get_max_offset_in_queue(topic, queue_id))

    def search_offset(self, topic: str, queue_id: int, timestamp_ms: int) -> int:
        return self._sync(lambda b: b.store.get_offset_by_timestamp(topic, queue_id, timestamp_ms))

    def close(self) -> None:
        """Close the connection: the broker sees the channel close (and removes it from its groups)."""
        if self.closed:
            return
        self.closed = True
        self._abandon_pending()
        self.link.to_broker(self._closed_at_broker)

    def abandon(self) -> None:
        """The process died without closing: the broker only notices when the channel expires."""
        self.closed = True
        self._abandon_pending()

    def _abandon_pending(self) -> None:
        for _callback, timer in self._pending.values():
            timer.cancel()
        self._pending.clear()
        self._held.clear()

    def _closed_at_broker(self) -> None:
        broker = self.host.broker
        if broker is not None:
            broker.channel_closed(self.channel)
