"""PopPushConsumer: a push consumer that pops (seed 004 §1.2, §2.2; rocketmq-grpc-v5 §3.6-§3.8).

Theory of operation
-------------------
The consumer does no rebalancing of its own: every ``rebalance_interval_ms`` (and when the broker
says the group changed) it asks the broker which queues to pop (QueryAssignment, with the group's
strategy and ``pop_share_queue_num``), and runs one *pop loop* per assigned queue (queue id -1: all
queues). A pop loop pops a batch (long polling ``poll_time_ms``), hands each message to the
listener, and pops again at once; it pauses ``flow_control_delay_ms`` while ``max_inflight_messages``
are being consumed, and ``error_delay_ms`` after a failed pop.

The listener gets each message with a ``complete`` callback and may call it later (consumption
takes time). ``complete("OK")`` acks the message by its receipt handle; any other status changes
its invisible time to the back-off for its reconsume times (:mod:`.backoff`), so the broker
delivers it again after that (no send-back, unlike a pull consumer). An ack that fails for a
transport reason is retried every ``ack_retry_interval_ms``; one refused with
INVALID_RECEIPT_HANDLE is given up (the message was revived, and comes again).

A crash (:meth:`crash`) loses everything in flight: no ack is sent, the messages stay invisible
until their invisible time ends, and the broker revives them.

Trace rows (source ``client:<client_id>``): DELIVER when a message is handed to the listener,
CONSUME with its outcome (``OK`` / ``LATER``), CRASH.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from reference.broker.pop.protocol import PopMessageRequest, PoppedMessage, PopResponse
from reference.broker.pop.receipt import INVALID_RECEIPT_HANDLE, ReceiptHandle
from reference.broker.protocol import ConsumerData
from reference.client.pop.backoff import DEFAULT_BACKOFF_MS, backoff_ms
from reference.client.pop.connection import BrokerHost, ClientError, PopConnection
from reference.clock import Clock
from reference.periodic import PeriodicTask
from reference.rules.codes import ResponseCode
from reference.rules.filter import SubscriptionData
from reference.rules.topics import pop_origin
from reference.trace import NULL_TRACE, Trace

CONSUME_OK = "OK"
CONSUME_LATER = "LATER"

#: listener(message, complete): consume ``message``, then call ``complete(status)``, now or later.
Listener = Callable[[PoppedMessage, Callable[[str], None]], None]


@dataclass
class PopPushConfig:
    #: Messages per pop (RocketMQ's 32).
    batch_size: int = 32
    #: Invisible time of each pop (the proxy's default for push consumers, 60 s).
    invisible_time_ms: int = 60_000
    #: Long-polling time of each pop (the gRPC push consumer's long_polling_timeout, 20 s).
    poll_time_ms: int = 20_000
    #: Client-side slack over the poll time before a pop counts as lost (the gRPC request timeout).
    request_timeout_ms: int = 3_000
    #: How often the assignment is asked for (seed 001: RebalanceService every 20 s).
    rebalance_interval_ms: int = 20_000
    #: How often the client heartbeats (RocketMQ's heartbeatBrokerInterval, 30 s).
    heartbeat_interval_ms: int = 30_000
    strategy_name: str = "AllocateMessageQueueAveragely"
    pop_share_queue_num: int = -1
    #: Messages in consumption before popping pauses (seed 000: pullThresholdForQueue, 1000).
    max_inflight_messages: int = 1_000
    #: Pause while over the threshold (seed 000: PULL_TIME_DELAY_MILLS_WHEN_FLOW_CONTROL, 50 ms).
    flow_control_delay_ms: int = 50
    #: Pause after a failed pop (seed 000: PULL_TIME_DELAY_MILLS_WHEN_EXCEPTION, 3 s).
    error_delay_ms: int = 3_000
    #: Retry interval of an ack that failed for a transport reason (gRPC push consumer: 1 s).
    ack_retry_interval_ms: int = 1_000
    backoff_ms: tuple[int, ...] = DEFAULT_BACKOFF_MS


class PopPushConsumer:
    def __init__(
        self,
        host: BrokerHost,
        clock: Clock,
        group: str,
        topic: str,
        client_id: str,
        listener: Listener,
        config: PopPushConfig | None = None,
        expression: str = "*",
        trace: Trace | None = None,
    ) -> None:
        self.host = host
        self.clock = clock
        self.group = group
        self.topic = topic
        self.client_id = client_id
        self.listener = listener
        self.config = config or PopPushConfig()
        self.expression = expression
        self.rec = (trace or NULL_TRACE).source(f"client:{client_id}", clock)
        self.connection = PopConnection(host, clock, client_id)
        self.running = False
        self.inflight = 0
        self.assigned: set[int] = set()
        self._broker_names: dict[str, str] = {}
        self._generation = 0
        self._rebalancer = PeriodicTask(clock, self.config.rebalance_interval_ms, self.config.rebalance_interval_ms,
                                        self.rebalance)
        self._heartbeater = PeriodicTask(clock, self.config.heartbeat_interval_ms, self.config.heartbeat_interval_ms,
                                         self.heartbeat)

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        """Connect, heartbeat, take the assignment and start popping."""
        self._generation += 1
        self.running = True
        self.connection = PopConnection(self.host, self.clock, self.client_id)
        self.connection.on_ids_changed = lambda _group: self.rebalance()
        self.heartbeat()
        self.rebalance()
        self._rebalancer.start()
        self._heartbeater.start()

    def crash(self) -> None:
        """Stop dead: nothing in flight is acked; the broker revives it after its invisible time."""
        self.rec.record("CRASH")
        self._stop()

    def shutdown(self) -> None:
        """Stop popping and leave the group; messages still in consumption are not acked."""
        with contextlib.suppress(ClientError):
            self.connection.call("unregister_client", self.connection, self.group)
        self._stop()

    def _stop(self) -> None:
        self._generation += 1
        self.running = False
        self.connection.close()
        self._rebalancer.cancel()
        self._heartbeater.cancel()
        self.assigned.clear()
        self._broker_names.clear()
        self.inflight = 0

    # -- membership and assignment -------------------------------------------------------------
    def heartbeat(self) -> None:
        sub = SubscriptionData.parse(self.topic, self.expression)
        with contextlib.suppress(ClientError):  # the next heartbeat tries again
            self.connection.call(
                "heartbeat", self.connection, self.client_id,
                [ConsumerData(self.group, (sub,), "CLUSTERING", "CONSUME_POP")],
            )

    def rebalance(self) -> None:
        """Ask the broker for this client's queues; start pop loops for new ones, end the others.
        When the broker cannot answer, the current assignment is kept."""
        if not self.running:
            return
        cfg = self.config
        try:
            queues = self.connection.call(
                "query_assignment", self.topic, self.group, self.client_id, cfg.strategy_name, "CLUSTERING",
                cfg.pop_share_queue_num,
            )
        except ClientError:
            return
        wanted = {q.queue_id for q in queues}
        new = wanted - self.assigned
        self.assigned = wanted
        for queue_id in sorted(new):
            self._pop(queue_id, self._generation)

    # -- the pop loop --------------------------------------------------------------------------
    def _pop(self, queue_id: int, generation: int) -> None:
        if generation != self._generation or queue_id not in self.assigned:
            return
        cfg = self.config
        if self.inflight >= cfg.max_inflight_messages:
            self.clock.call_later(cfg.flow_control_delay_ms, lambda: self._pop(queue_id, generation))
            return
        request = PopMessageRequest(
            self.group, self.topic, queue_id, cfg.batch_size, cfg.invisible_time_ms, cfg.poll_time_ms,
            self.expression, self.client_id,
        )
        self.connection.pop(
            request, lambda response, error: self._on_popped(queue_id, generation, response, error),
            cfg.request_timeout_ms,
        )

    def _on_popped(
        self, queue_id: int, generation: int, response: PopResponse | None, error: ClientError | None
    ) -> None:
        if generation != self._generation:
            return
        delay = 0
        if response is None or response.code == ResponseCode.POLLING_FULL:
            delay = self.config.error_delay_ms
        else:
            for message in response.messages:
                self._deliver(message, generation)
        self.clock.call_later(delay, lambda: self._pop(queue_id, generation))

    def _deliver(self, message: PoppedMessage, generation: int) -> None:
        self.inflight += 1
        self.rec.record(
            "DELIVER", **self._columns(message), reconsume_times=message.reconsume_times,
            detail={"handle": message.handle},
        )
        self.listener(message, lambda status: self._complete(message, status, generation))

    def _complete(self, message: PoppedMessage, status: str, generation: int) -> None:
        if generation != self._generation:
            return  # crashed meanwhile: the outcome is lost with the process
        self.inflight -= 1
        outcome = CONSUME_OK if status == CONSUME_OK else CONSUME_LATER
        self.rec.record("CONSUME", **self._columns(message), status=outcome)
        self._broker_names.pop(message.handle, None)
        if status == CONSUME_OK:
            self._ack(message, generation)
        else:
            self._retry_later(message)

    def _ack(self, message: PoppedMessage, generation: int) -> None:
        if generation != self._generation:
            return
        try:
            self.connection.call("ack", self.group, self.topic, message.handle, self.client_id)
        except ClientError as exc:
            if exc.code != INVALID_RECEIPT_HANDLE:
                self.clock.call_later(self.config.ack_retry_interval_ms, lambda: self._ack(message, generation))

    def _retry_later(self, message: PoppedMessage) -> None:
        """The "nack" of a push consumer over POP: come back after the back-off."""
        with contextlib.suppress(ClientError):  # it is revived when its current invisible time ends anyway
            self.connection.call(
                "change_invisible_time", self.group, self.topic, message.handle,
                backoff_ms(message.reconsume_times, self.config.backoff_ms), self.client_id,
            )

    def _columns(self, message: PoppedMessage) -> dict[str, Any]:
        queue_id, offset = pop_origin(message.properties, message.queue_id, message.queue_offset)
        broker = self._broker_names.get(message.handle)
        if broker is None:  # the handle names the broker that issued it; parsed once per delivery
            broker = self._broker_names[message.handle] = ReceiptHandle.parse(message.handle).broker_name
        return dict(
            group=self.group, client_id=self.client_id, topic=message.topic, broker=broker, queue_id=queue_id,
            offset=offset, msg_id=message.msg_id,
        )
