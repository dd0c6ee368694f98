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
subscription acknowledged every message (or ``max_ms`` passes). While it runs it checks the two
permit invariants and reports each violation as a finding:

* *overrun*: a consumer received more messages than it granted permits since it subscribed, or the
  broker holds negative permits for it;
* *freeze*: at a quiet instant, a consumer that may receive has permits while its subscription has
  messages to send.

and, at the end, *lost* (a message the subscription never acknowledged) and *redelivery-count*
(in a shared subscription the k-th dispatch of a message must carry redelivery count k; in
exclusive and failover ones always 0).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reference.broker.broker import Broker, BrokerComponents
from reference.broker.permits.batch import encode_batch
from reference.broker.permits.protocol import InitialPosition, SubType
from reference.client.permits.consumer import PermitConsumerClient, PermitConsumerConfig
from reference.sim.engine import SimRun
from reference.sim.findings import Finding
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


#: The rows a permit failure note shows (with :func:`reference.sim.timeline.format_timeline`).
PERMIT_EVENTS = ("FLOW", "DISPATCH", "CRASH", "RESTART")
#: The requirement each permit anomaly breaks.
PERMIT_REQUIREMENTS = {"overrun": "FLOW-2", "freeze": "FLOW-3", "redelivery-count": "FLOW-6", "lost": "FLOW-10"}


def _finding(kind: str, message: str, client_id: str | None = None) -> Finding:
    return Finding(kind, PERMIT_REQUIREMENTS[kind], message, client_id=client_id)


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
    clock, host, trace, start = sim.clock, sim.host, sim.trace, sim.start_ms
    findings: list[Finding] = []
    assert host.broker is not None
    host.broker.create_topic(TOPIC, 1)
    client_config = PermitConsumerConfig(
        receiver_queue_size=config.receiver_queue_size,
        negative_ack_redelivery_delay_ms=config.negative_ack_redelivery_delay_ms,
        sub_type=config.sub_type, initial_position=InitialPosition.EARLIEST,
    )
    consumers = config.consumers if config.sub_type is not SubType.EXCLUSIVE else 1
    apps = [
        _App(PermitConsumerClient(host, clock, SUBSCRIPTION, TOPIC, f"c{i}", client_config, trace))
        for i in range(consumers)
    ]

    def work(app: _App) -> None:
        """The application loop: take one message, process it, ack or nack it, take the next."""
        if app.busy or not app.alive or not app.client.connected:
            return
        message = app.client.receive()
        check_overrun(app)
        if message is None:
            return
        app.busy = True
        now = clock.now_ms()
        delay = app.process_ms if now < app.slow_until else config.fast_process_ms

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
            work(app)

        clock.call_later(delay, done)

    def check_overrun(app: _App) -> None:
        c = app.client
        if c.received > c.granted:
            findings.append(_finding(
                "overrun", f"t={clock.now_ms() - start} {c.client_id} received {c.received} > granted {c.granted}",
                c.client_id,
            ))

    def connect(app: _App) -> None:
        app.alive = True
        app.busy = False
        app.client.on_arrival = lambda: (check_overrun(app), work(app))
        try:
            app.client.subscribe()
        except Exception:  # noqa: BLE001 - broker down: try again when it is back
            return
        work(app)

    def back() -> None:
        """The broker is up again: every consumer still running reconnects."""
        for app in apps:
            if app.alive:
                connect(app)

    host.on_back = back
    for app in apps:
        connect(app)
    produced = 0

    def apply(event: Step) -> None:
        nonlocal produced
        if isinstance(event, Produce):
            if host.broker is None:
                return
            for _ in range(event.count):
                if event.batch == 1:
                    host.broker.send(Message(TOPIC, b"m%d" % produced, 0))
                else:
                    body, props = encode_batch([b"m%d.%d" % (produced, i) for i in range(event.batch)])
                    host.broker.send(Message(TOPIC, body, 0, properties=props))
                produced += event.batch
        elif isinstance(event, Crash):
            app = apps[event.consumer % len(apps)]
            if app.alive and app.client.connected:
                app.alive = False
                app.client.crash()
                if event.down_ms is not None:
                    clock.call_later(event.down_ms, lambda: (app.client.rec.record("RESTART"), connect(app)))
        elif isinstance(event, SlowConsumer):
            app = apps[event.consumer % len(apps)]
            app.process_ms = event.ms_per_message
            app.slow_until = clock.now_ms() + event.for_ms if event.for_ms is not None else FOREVER
        elif isinstance(event, FailNext):
            apps[event.consumer % len(apps)].nack_next += event.count
        elif isinstance(event, BrokerRestart):
            if host.broker is None:
                return
            host.restart(crash=event.crash, down_ms=event.down_ms)
            for app in apps:
                app.client.connected = False

    def check_freeze() -> None:
        broker = host.broker
        if broker is not None:
            for f in freeze_findings(broker, clock.now_ms() - start):
                findings.append(f)
        clock.call_later(CHECK_INTERVAL_MS, check_freeze)

    last = sim.schedule(schedule, apply)
    clock.call_later(CHECK_INTERVAL_MS, check_freeze)
    sim.run_until(last)
    finished = sim.settle(lambda: all_acknowledged(host.broker), config.max_ms,  # type: ignore[arg-type]
                          give_up=lambda: bool(findings) and config.stop_at_first_finding)
    if not finished and not findings:
        findings.append(_finding("lost", f"the subscription did not acknowledge all {produced} messages"))
    host.close()
    trace.end()
    findings += redelivery_count_findings(sink.rows, config.sub_type)
    return PermitSimResult(sink.rows, produced, finished, config, findings)


def all_acknowledged(broker: Broker) -> bool:
    sub = broker.permits.subscriptions.get((SUBSCRIPTION, TOPIC))
    if sub is None:
        return broker.store.get_max_offset_in_queue(TOPIC, 0) == 0
    return sub.cursor.mark_delete >= broker.store.get_max_offset_in_queue(TOPIC, 0)


def freeze_findings(broker: Broker, t: int) -> list[Finding]:
    """Consumers that may receive, hold permits, and have messages waiting: a frozen dispatcher."""
    out = []
    for sub in broker.permits.subscriptions.values():
        dispatcher = sub.dispatcher
        if any(c.permits < 0 for c in dispatcher.consumers):
            out.append(_finding("overrun", f"t={t} negative permits {[c.permits for c in dispatcher.consumers]}"))
        eligible = [dispatcher.active] if hasattr(dispatcher, "active") else list(dispatcher.consumers)
        backlog = bool(getattr(dispatcher, "replay", ())) or sub.cursor.has_new()
        for consumer in eligible:
            if consumer is not None and consumer.permits > 0 and backlog:
                out.append(_finding(
                    "freeze", f"t={t} {consumer.client_id} has {consumer.permits} permits and messages are waiting",
                    consumer.client_id,
                ))
    return out


def redelivery_count_findings(rows: list[dict[str, Any]], sub_type: SubType) -> list[Finding]:
    """Shared: the k-th dispatch of a message (within one broker run) carries k; others carry 0."""
    out = []
    dispatches: dict[str, int] = defaultdict(int)
    for r in sorted(rows, key=lambda r: (r["ts"], r["source"], r["seq"])):
        if r["event"] == "CRASH" and r["source"].startswith("broker:"):
            dispatches.clear()  # the broker's tracker does not survive a restart
        if r["event"] != "DISPATCH":
            continue
        count = json.loads(r["detail"])["redelivery_count"]
        expected = dispatches[r["msg_id"]] if sub_type is SubType.SHARED else 0
        if count != expected:
            nth = dispatches[r["msg_id"]]
            text = f"{r['msg_id']} dispatch #{nth} carried {count}, expected {expected}"
            out.append(_finding("redelivery-count", text))
        dispatches[r["msg_id"]] += 1
    return out

