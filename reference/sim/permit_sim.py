"""Permit simulation: one broker and N permit-based consumers of one subscription, with faults.

Theory of operation
-------------------
A *schedule* is data: producer bursts (single messages or batch entries), consumer crashes (the
broker sees the connection close; the consumer subscribes again after ``down_ms``), slow
applications (each message takes ``process_ms``), negative acknowledgements of the next n messages,
and broker restarts (every consumer subscribes again when the broker is back). Each consumer's
application takes a message from the receive queue, works on it for its processing time, acks
(or nacks) it and takes the next; an idle application wakes when messages arrive.

:func:`run` plays the schedule on a :class:`~reference.clock.SimClock`, then lets it settle until the
subscription acknowledged every message (or ``max_ms`` passes). The permit judges
(:mod:`reference.sim.judges.permits`) check *overrun* and *freeze* while it runs and *redelivery-count* from
the trace at the end; a run that does not settle is *lost*.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from reference.broker.broker import Broker, BrokerComponents
from reference.broker.permits.batch import encode_batch
from reference.broker.permits.protocol import InitialPosition, SubType
from reference.client.permits.consumer import PermitConsumerClient, PermitConsumerConfig
from reference.sim.engine import SimRun
from reference.sim.findings import Finding
from reference.sim.judges import (
    freeze_findings,
    overrun_findings,
    permit_finding,
    redelivery_count_findings,
)
from reference.sim.pop_sim import SIM_STORE
from reference.sim.steps import (
    FOREVER,
    BrokerRestart,
    Crash,
    FailNext,
    Produce,
    SlowConsumer,
    Step,
    require_supported,
)
from reference.store.config import MessageStoreConfig
from reference.store.message import Message
from reference.trace import MemorySink

TOPIC = "PermitSimTopic"
SUBSCRIPTION = "PermitSimSub"
#: How often the invariants are checked at a quiet instant.
CHECK_INTERVAL_MS = 100




@dataclass(frozen=True)
class PermitSimConfig:
    consumers: int = 3
    sub_type: SubType = SubType.SHARED
    receiver_queue_size: int = 10
    negative_ack_redelivery_delay_ms: int = 1_000
    fast_process_ms: int = 2
    #: Give up waiting for the subscription to acknowledge everything after this much virtual time.
    max_ms: int = 5 * 60_000
    #: End the run at the first finding (a failed run need not be played to the end).
    stop_at_first_finding: bool = True
    seed: int = 0


@dataclass
class PermitSimResult:
    rows: list[dict[str, Any]]
    produced: int
    finished: bool
    config: PermitSimConfig
    findings: list[Finding] = field(default_factory=list)


#: The steps this workload plays, and the fields it has no meaning for: its consumers are named (no Leave or
#: Join), fail by count (FailNext, a negative acknowledgement), and share the topic's one queue.
PERMIT_STEPS: dict[type, tuple[str, ...]] = {
    Produce: ("queue",), Crash: ("silent",), SlowConsumer: (), FailNext: (), BrokerRestart: (),
}


@dataclass
class _App:
    client: PermitConsumerClient
    process_ms: int = 0
    slow_until: int = 0
    nack_next: int = 0
    busy: bool = False
    alive: bool = True


def run(
    schedule: Iterable[Step],
    config: PermitSimConfig | None = None,
    components: BrokerComponents | None = None,
    data_dir: str | Path | None = None,
) -> PermitSimResult:
    """Play ``schedule`` and settle, checking the permit invariants as it goes."""
    config = config or PermitSimConfig()
    sink = MemorySink()
    with SimRun(f"permit-sim-{config.seed}", sink, MessageStoreConfig(**SIM_STORE), data_dir=data_dir,
                components=components) as sim:
        return _play(sim, sink, require_supported(schedule, "permit", PERMIT_STEPS), config)


def _play(sim: SimRun, sink: MemorySink, schedule: list[Step], config: PermitSimConfig) -> PermitSimResult:
    host = sim.host
    assert host.broker is not None
    host.broker.create_topic(TOPIC, 1)
    group = _PermitGroup(sim, config)
    host.on_back = group.back
    for app in group.apps:
        group.connect(app)
    last = sim.schedule(schedule, group.apply)
    sim.clock.call_later(CHECK_INTERVAL_MS, group.check_freeze)
    sim.run_until(last)
    findings = group.findings
    finished = sim.settle(lambda: all_acknowledged(host.broker), config.max_ms,  # type: ignore[arg-type]
                          give_up=lambda: bool(findings) and config.stop_at_first_finding)
    if not finished and not findings:
        findings.append(permit_finding("lost", f"the subscription did not acknowledge all {group.produced} messages"))
    host.close()
    sim.trace.end()
    findings += redelivery_count_findings(sink.rows, config.sub_type)
    return PermitSimResult(sink.rows, group.produced, finished, config, findings)


class _PermitGroup:
    """The consumers of the subscription and their applications as a run plays its schedule, with the findings of
    the invariants judged while it plays (overrun at every receive and arrival, freeze at quiet instants)."""

    def __init__(self, sim: SimRun, config: PermitSimConfig) -> None:
        self.clock, self.host, self.start = sim.clock, sim.host, sim.start_ms
        self.config = config
        self.findings: list[Finding] = []
        self.produced = 0
        client_config = PermitConsumerConfig(
            receiver_queue_size=config.receiver_queue_size,
            negative_ack_redelivery_delay_ms=config.negative_ack_redelivery_delay_ms,
            sub_type=config.sub_type, initial_position=InitialPosition.EARLIEST,
        )
        consumers = config.consumers if config.sub_type is not SubType.EXCLUSIVE else 1
        self.apps = [
            _App(PermitConsumerClient(self.host, self.clock, SUBSCRIPTION, TOPIC, f"c{i}", client_config, sim.trace))
            for i in range(consumers)
        ]

    def work(self, app: _App) -> None:
        """The application loop: take one message, process it, ack or nack it, take the next."""
        if app.busy or not app.alive or not app.client.connected:
            return
        message = app.client.receive()
        self.check_overrun(app)
        if message is None:
            return
        app.busy = True
        now = self.clock.now_ms()
        delay = app.process_ms if now < app.slow_until else self.config.fast_process_ms

        def done() -> None:
            app.busy = False
            if not app.alive or not app.client.connected:
                return
            try:
                if app.nack_next > 0:
                    app.nack_next -= 1
                    app.client.negative_acknowledge(message)
                else:
                    app.client.ack(message)
            except Exception:  # noqa: BLE001 - a broker that is down refuses the ack; redelivery covers it
                pass
            self.work(app)

        self.clock.call_later(delay, done)

    def check_overrun(self, app: _App) -> None:
        self.findings += overrun_findings(app.client, self.clock.now_ms() - self.start)

    def arrived(self, app: _App) -> None:
        """Messages reached the consumer's receive queue: judge its permits, wake its application."""
        self.check_overrun(app)
        self.work(app)

    def connect(self, app: _App) -> None:
        app.alive = True
        app.busy = False
        app.client.on_arrival = partial(self.arrived, app)
        try:
            app.client.subscribe()
        except Exception:  # noqa: BLE001 - broker down: try again when it is back
            return
        self.work(app)

    def come_back(self, app: _App) -> None:
        """A crashed consumer restarts after its down time and subscribes again."""
        app.client.rec.record("RESTART")
        self.connect(app)

    def back(self) -> None:
        """The broker is up again: every consumer still running reconnects."""
        for app in self.apps:
            if app.alive:
                self.connect(app)

    def apply(self, event: Step) -> None:
        host, apps = self.host, self.apps
        if isinstance(event, Produce):
            if host.broker is None:
                return
            for _ in range(event.count):
                if event.batch == 1:
                    host.broker.send(Message(TOPIC, b"m%d" % self.produced, 0))
                else:
                    body, props = encode_batch([b"m%d.%d" % (self.produced, i) for i in range(event.batch)])
                    host.broker.send(Message(TOPIC, body, 0, properties=props))
                self.produced += event.batch
        elif isinstance(event, Crash):
            app = apps[event.consumer % len(apps)]
            if app.alive and app.client.connected:
                app.alive = False
                app.client.crash()
                if event.down_ms is not None:
                    self.clock.call_later(event.down_ms, partial(self.come_back, app))
        elif isinstance(event, SlowConsumer):
            app = apps[event.consumer % len(apps)]
            app.process_ms = event.ms_per_message
            app.slow_until = self.clock.now_ms() + event.for_ms if event.for_ms is not None else FOREVER
        elif isinstance(event, FailNext):
            apps[event.consumer % len(apps)].nack_next += event.count
        elif isinstance(event, BrokerRestart):
            if host.broker is None:
                return
            host.restart(crash=event.crash, down_ms=event.down_ms)
            for app in apps:
                app.client.connected = False

    def check_freeze(self) -> None:
        """At a quiet instant (every :data:`CHECK_INTERVAL_MS`): no consumer holds permits while messages wait."""
        broker = self.host.broker
        if broker is not None:
            self.findings += freeze_findings(broker, self.clock.now_ms() - self.start)
        self.clock.call_later(CHECK_INTERVAL_MS, self.check_freeze)


def all_acknowledged(broker: Broker) -> bool:
    sub = broker.permits.subscriptions.get((SUBSCRIPTION, TOPIC))
    if sub is None:
        return broker.store.get_max_offset_in_queue(TOPIC, 0) == 0
    return sub.cursor.mark_delete >= broker.store.get_max_offset_in_queue(TOPIC, 0)
