"""PermitConsumerClient: Pulsar's consumer and its receive queue (seed 003; pulsar-binary §9, §12).

Theory of operation
-------------------
On subscribing the client grants ``receiver_queue_size`` permits (FLOW, 1000 by default): that many
messages may be sent before the application took any. Messages the broker dispatches go to the
receive queue (``incoming``); ``receive`` takes the oldest. Each taken message is counted, and when
the count reaches half the queue size (integer division, at least 1) the client grants that many
permits again and starts counting anew: the broker never has more outstanding than the queue can
hold. With ``receiver_queue_size`` 0 there is no initial grant; each ``receive`` on an empty queue
grants one permit.

Acknowledgement is per message. A negative acknowledgement asks for the message again after
``negative_ack_redelivery_delay_ms`` (60 s default, at least 100 ms), checked every third of that
delay; with ``unacked_messages_timeout_ms`` (off by default, at least 10 s when on, checked every
second) a message received and not acknowledged in time is asked for again. Shared subscriptions
name the messages; exclusive and failover subscriptions ask for everything unacknowledged (the
broker rewinds).

After the broker restarts (:meth:`resubscribe`) the receive queue is cleared and the full window is
granted again, as the Java client does after a reconnect.

Trace rows (source ``client:<client_id>``): DELIVER when the application receives a message,
CONSUME ``OK`` on ack and ``LATER`` on a negative ack, CRASH.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from reference.broker.permits.protocol import DispatchedMessage, InitialPosition, Position, SubType
from reference.client.pop.connection import BrokerHost, ClientError  # one client error type for both
from reference.clock import Clock, TimerHandle
from reference.rules.errors import InvalidRequest
from reference.trace import NULL_TRACE, Trace

#: Pulsar client defaults and bounds (pulsar-binary §15).
DEFAULT_RECEIVER_QUEUE_SIZE = 1_000
DEFAULT_NEGATIVE_ACK_REDELIVERY_DELAY_MS = 60_000
MIN_NEGATIVE_ACK_REDELIVERY_DELAY_MS = 100
MIN_UNACKED_MESSAGES_TIMEOUT_MS = 10_000
#: The unacked-message tracker's tick.
UNACKED_TICK_MS = 1_000


@dataclass
class PermitConsumerConfig:
    receiver_queue_size: int = DEFAULT_RECEIVER_QUEUE_SIZE
    negative_ack_redelivery_delay_ms: int = DEFAULT_NEGATIVE_ACK_REDELIVERY_DELAY_MS
    #: 0 turns the unacked-message timeout off.
    unacked_messages_timeout_ms: int = 0
    sub_type: SubType = SubType.EXCLUSIVE
    queue_id: int = 0
    initial_position: InitialPosition = InitialPosition.LATEST

    def __post_init__(self) -> None:
        if self.receiver_queue_size < 0:
            raise ValueError("PermitConsumerConfig.receiver_queue_size: must be >= 0")
        if self.negative_ack_redelivery_delay_ms < MIN_NEGATIVE_ACK_REDELIVERY_DELAY_MS:
            raise ValueError(
                "PermitConsumerConfig.negative_ack_redelivery_delay_ms: "
                f"must be >= {MIN_NEGATIVE_ACK_REDELIVERY_DELAY_MS}"
            )
        if self.unacked_messages_timeout_ms and self.unacked_messages_timeout_ms < MIN_UNACKED_MESSAGES_TIMEOUT_MS:
            raise ValueError(
                f"PermitConsumerConfig.unacked_messages_timeout_ms: must be 0 or >= {MIN_UNACKED_MESSAGES_TIMEOUT_MS}"
            )

    @property
    def refill_threshold(self) -> int:
        """Messages taken before permits are granted again: half the queue, at least one."""
        return max(1, self.receiver_queue_size // 2)


class PermitConsumerClient:
    def __init__(
        self,
        host: BrokerHost,
        clock: Clock,
        subscription: str,
        topic: str,
        client_id: str,
        config: PermitConsumerConfig | None = None,
        trace: Trace | None = None,
    ) -> None:
        self.host = host
        self.clock = clock
        self.group = subscription
        self.topic = topic
        self.client_id = client_id
        self.key = f"{client_id}#permits"
        self.config = config or PermitConsumerConfig()
        self.rec = (trace or NULL_TRACE).source(f"client:{client_id}", clock)
        self.incoming: deque[DispatchedMessage] = deque()
        self.connected = False
        self.broker_name = ""
        self._taken_since_flow = 0
        self._unacked: dict[Position, int] = {}
        self._nacked: dict[Position, int] = {}
        self._nack_timer: TimerHandle | None = None
        self._unacked_timer: TimerHandle | None = None
        #: Permits granted and messages received since the current subscribe. A delivery (one read of the
        #: broker) that starts with ``received >= granted`` was read at 0 permits or below (FLOW-2); an entry
        #: that starts so is an overshoot beyond the batch being sent (FLOW-11, profile strict).
        self.granted = 0
        self.received = 0
        self.overdrawn_reads = 0
        self.overdrawn_entries = 0
        #: Called (on a later turn of the clock) when messages arrive: Pulsar's MessageListener hook.
        self.on_arrival: Callable[[], None] | None = None

    # -- broker calls --------------------------------------------------------------------------
    def _call(self, method: str, *args: Any) -> Any:
        broker = self.host.broker
        if broker is None:
            raise ClientError("CONNECTION_REFUSED", "the broker is down")
        try:
            return getattr(broker, method)(*args)
        except InvalidRequest as exc:
            raise ClientError(exc.code, f"{exc.field}: {exc.rule}") from None

    def _flow(self, permits: int) -> None:
        with contextlib.suppress(ClientError):  # a broker that is down gets the full window on resubscribe
            self.granted += permits  # counted first: the broker may dispatch inside the call
            try:
                self._call("flow", self.group, self.client_id, self.topic, permits)
            except ClientError:
                self.granted -= permits
                raise

    # -- lifecycle -----------------------------------------------------------------------------
    def subscribe(self) -> None:
        """SUBSCRIBE, then FLOW(receiver_queue_size)."""
        cfg = self.config
        self._call(
            "subscribe_permits", self.group, self.topic, self.client_id, self, cfg.sub_type, cfg.queue_id,
            cfg.initial_position,
        )
        self.connected = True
        self.broker_name = self.host.broker.config.broker_name
        self.granted = self.received = self.overdrawn_reads = self.overdrawn_entries = 0
        self.incoming.clear()
        self._taken_since_flow = 0
        self._unacked.clear()
        if cfg.receiver_queue_size > 0:
            self._flow(cfg.receiver_queue_size)

    def resubscribe(self) -> None:
        """After a reconnect: a fresh subscription and a fresh window (the receive queue is cleared)."""
        self.subscribe()

    def close(self) -> None:
        with contextlib.suppress(ClientError):
            self._call("close_permit_consumer", self.group, self.client_id, self.topic)
        self._stop()

    def crash(self) -> None:
        """The process dies: its connection closes, so the broker drops the consumer and what it did not
        acknowledge goes back for redelivery; nothing the application held is acknowledged."""
        self.rec.record("CRASH")
        self.close()

    def _stop(self) -> None:
        self.connected = False
        self.incoming.clear()
        for timer in (self._nack_timer, self._unacked_timer):
            if timer is not None:
                timer.cancel()
        self._nack_timer = self._unacked_timer = None
        self._nacked.clear()
        self._unacked.clear()

    # -- the channel ---------------------------------------------------------------------------
    def deliver_messages(self, group: str, topic: str, messages: list[DispatchedMessage]) -> None:
        if not self.connected:
            return
        if messages and self.received >= self.granted:
            self.overdrawn_reads += 1
        previous = None
        for message in messages:
            entry = message.position.offset
            if entry != previous and self.received >= self.granted:
                self.overdrawn_entries += 1
            previous = entry
            self.received += 1
        self.incoming.extend(messages)
        if self.on_arrival is not None:
            listener = self.on_arrival
            self.clock.call_later(0, lambda: listener() if self.connected else None)

    # -- the application's side ----------------------------------------------------------------
    def receive(self) -> DispatchedMessage | None:
        """Take the oldest message of the receive queue (None when it is empty)."""
        cfg = self.config
        if not self.connected:
            return None
        if not self.incoming and cfg.receiver_queue_size == 0:
            self._flow(1)
        if not self.incoming:
            return None
        message = self.incoming.popleft()
        if cfg.receiver_queue_size > 0:
            self._taken_since_flow += 1
            if self._taken_since_flow >= cfg.refill_threshold:
                taken, self._taken_since_flow = self._taken_since_flow, 0
                self._flow(taken)
        if cfg.unacked_messages_timeout_ms:
            self._unacked[message.position] = self.clock.now_ms()
            if self._unacked_timer is None:
                self._unacked_timer = self.clock.call_later(UNACKED_TICK_MS, self._unacked_tick)
        self.rec.record(
            "DELIVER", group=self.group, client_id=self.client_id, topic=self.topic, broker=self.broker_name,
            queue_id=cfg.queue_id, offset=message.position.offset, msg_id=message.msg_id,
            reconsume_times=message.redelivery_count,
        )
        return message

    def ack(self, message: DispatchedMessage) -> None:
        self._unacked.pop(message.position, None)
        self._nacked.pop(message.position, None)
        self._record_consume(message, "OK")
        self._call("ack_permits", self.group, self.client_id, self.topic, [message.position])

    def negative_acknowledge(self, message: DispatchedMessage) -> None:
        """Ask for ``message`` again after the negative-ack delay."""
        self._unacked.pop(message.position, None)
        self._nacked[message.position] = self.clock.now_ms() + self.config.negative_ack_redelivery_delay_ms
        self._record_consume(message, "LATER")
        if self._nack_timer is None:
            self._nack_timer = self.clock.call_later(self.config.negative_ack_redelivery_delay_ms // 3, self._nack_tick)

    def _record_consume(self, message: DispatchedMessage, status: str) -> None:
        self.rec.record(
            "CONSUME", group=self.group, client_id=self.client_id, msg_id=message.msg_id, status=status,
            topic=self.topic, broker=self.broker_name, queue_id=self.config.queue_id, offset=message.position.offset,
        )

    def _redeliver(self, positions: list[Position]) -> None:
        shared = self.config.sub_type is SubType.SHARED
        with contextlib.suppress(ClientError):
            self._call(
                "redeliver_unacknowledged", self.group, self.client_id, self.topic, positions if shared else None
            )

    def _nack_tick(self) -> None:
        self._nack_timer = None
        now = self.clock.now_ms()
        due = sorted(p for p, t in self._nacked.items() if t <= now)
        for position in due:
            del self._nacked[position]
        if due:
            self._redeliver(due)
        if self._nacked and self.connected:
            self._nack_timer = self.clock.call_later(self.config.negative_ack_redelivery_delay_ms // 3, self._nack_tick)

    def _unacked_tick(self) -> None:
        self._unacked_timer = None
        now = self.clock.now_ms()
        timeout = self.config.unacked_messages_timeout_ms
        expired = sorted(p for p, t in self._unacked.items() if now - t >= timeout)
        for position in expired:
            del self._unacked[position]
        if expired:
            self._redeliver(expired)
        if self._unacked and self.connected:
            self._unacked_timer = self.clock.call_later(UNACKED_TICK_MS, self._unacked_tick)
