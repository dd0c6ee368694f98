"""Simulation: one broker, a producer and a consumer group on virtual time, driven by a Scenario.

Theory of operation
-------------------
Everything runs on one :class:`~reference.clock.SimClock` and draws every random choice (network
latency and loss, listener time and failures, client ids) from one ``random.Random(seed)``: the same
scenario and seed give the same trace, row for row, so a failure found once is found again and can
be shrunk. The broker is the real reference broker on a temporary directory (``/dev/shm`` when
available) so that restarts exercise the store's recovery; each consumer is the real reference push
consumer behind an :class:`~reference.client.inprocess.InProcessGateway` whose link is the simulated
network. Components run on their own :class:`~reference.clock.ProcessClock`, so a crash stops
all they scheduled.

A run plays the scenario's timed steps (from when its first consumers are up), then **settles**: no more
faults, time goes on for at least ``min_settle_ms`` (longer after a silent crash, until the broker has
expired the dead channel) and until every message is consumed and ownership is stable, or
``max_settle_ms`` more. If no consumer is
alive when settling starts, one joins (at-least-once needs a consumer). The trace ends with END rows.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reference.broker.config import BrokerConfig
from reference.client.client_instance import MQClientInstance
from reference.client.components import ClientComponents
from reference.client.config import ConsumerConfig, MessageModel
from reference.client.inprocess import InProcessGateway
from reference.client.push_consumer import DefaultMQPushConsumer
from reference.clock import ProcessClock, SimClock
from reference.sim.engine import SimRun
from reference.sim.listener import SimListener
from reference.sim.network import SimLink
from reference.sim.progress import ProgressTracker
from reference.sim.scenario import Scenario
from reference.sim.steps import (
    BrokerRestart,
    Crash,
    FailPercent,
    Join,
    Leave,
    Produce,
    Retention,
    SlowConsumer,
    Step,
    require_supported,
)
from reference.sim.timeline import format_timeline
from reference.store.config import MessageStoreConfig
from reference.store.message import UNIQ_KEY, Message
from reference.trace import MemorySink, TraceSink

#: How often the settle phase asks whether the run is quiet.
SETTLE_POLL_MS = 5_000
#: The steps this workload plays (every one but FailNext: its listener fails by a rate, FailPercent), and the
#: fields it has no meaning for.
PULL_STEPS: dict[type, tuple[str, ...]] = {
    Produce: ("batch",), Crash: (), Leave: (), Join: (), SlowConsumer: (), FailPercent: (), Retention: (),
    BrokerRestart: (),
}
#: After a silent crash, settling lasts until the broker has surely expired the channel: its timeout,
#: one scan interval, and a rebalance round.
_EXPIRY_SLACK_MS = 30_000


@dataclass
class SimConsumer:
    client_id: str
    process: ProcessClock
    gateway: InProcessGateway
    consumer: DefaultMQPushConsumer
    listener: SimListener


@dataclass
class SimResult:
    scenario: Scenario
    #: The trace, when recorded to memory (the default).
    rows: list[dict[str, Any]] | None
    events: int
    sim_ms: int
    sent: int
    quiet: bool
    outstanding: int
    queues: tuple[tuple[str, int], ...]
    live_clients: tuple[str, ...]
    stats: dict[str, Any] = field(default_factory=dict)

    def timeline(self, limit: int = 200, **filters: Any) -> str:
        return format_timeline(self.rows or [], limit=limit, **filters)


class Simulation:
    def __init__(
        self, scenario: Scenario, *, components: ClientComponents | None = None, sink: TraceSink | None = None,
        data_dir: str | Path | None = None,
    ) -> None:
        self.scenario = scenario
        self.config = scenario.config
        self.components = components or ClientComponents()
        self._sink = sink if sink is not None else MemorySink()
        self._data_dir = Path(data_dir) if data_dir is not None else None
        self.rng = random.Random(self.config.seed)
        self.clock = SimClock()
        self.consumers: list[SimConsumer] = []
        self.crashed: list[str] = []
        self._ids: set[str] = set()
        self._incarnation = 0
        self._produced = 0
        self._failures: dict[str, int] = {}
        self._last_silent_crash_ms: int | None = None

    # -- the run -------------------------------------------------------------------------------
    def run(self) -> SimResult:
        config = self.config
        steps = require_supported(self.scenario.steps, "pull and rebalance", PULL_STEPS)
        queues = tuple((config.topic, q) for q in range(config.queues))
        self.tracker = ProgressTracker(
            self._sink, MessageModel(config.model) is MessageModel.CLUSTERING, queues, config.stable_ms
        )
        store_config = MessageStoreConfig(
            commit_log_segment_bytes=config.commit_log_segment_bytes,
            consume_queue_units_per_segment=config.consume_queue_units_per_segment,
            file_reserved_time_hours=0,
        )
        with SimRun(f"sim-{config.seed}", self.tracker, store_config, data_dir=self._data_dir,
                    broker_config=BrokerConfig(), clock=self.clock) as sim:
            self.trace, self.host = sim.trace, sim.host
            self.offset_dir = sim.root / "client-offsets"
            self.host.on_down = self._broker_down
            started = sim.start_ms
            assert self.host.broker is not None
            self.host.broker.create_topic(config.topic, config.queues)
            for i in range(config.consumers):
                if i and config.start_gap_ms:
                    self.clock.advance(config.start_gap_ms)
                self._join(revive=False)
            sim.play(steps, self.apply)
            self._settle()
            self.trace.end()
        rows = self._sink.rows if isinstance(self._sink, MemorySink) else None
        return SimResult(
            self.scenario, rows, self.tracker.events, self.clock.now_ms() - started, self._produced,
            self.tracker.quiet(self.clock.now_ms()), self.tracker.outstanding(), tuple(sorted(self.tracker.owners)),
            tuple(sorted(c.client_id for c in self.consumers)),
            {"broker_restarts": self.host.restarts, "crashed": len(self.crashed)},
        )

    def _settle(self) -> None:
        config = self.config
        if not self.consumers:
            self._join(revive=False)
        now = self.clock.now_ms()
        end_min = now + config.min_settle_ms
        if self._last_silent_crash_ms is not None:
            broker_config = self.host.host.config
            expiry = (self._last_silent_crash_ms + broker_config.channel_expired_timeout_ms
                      + broker_config.channel_scan_interval_ms + _EXPIRY_SLACK_MS)
            end_min = max(end_min, expiry)
        limit = end_min + config.max_settle_ms
        while self.clock.now_ms() < limit:
            self.clock.advance(SETTLE_POLL_MS)
            now = self.clock.now_ms()
            if now >= end_min and self.host.broker is not None and self.tracker.quiet(now):
                break

    # -- steps ---------------------------------------------------------------------------------
    def apply(self, step: Step) -> None:
        if isinstance(step, Produce):
            self._produce(step.count, step.queue)
        elif isinstance(step, Crash):
            self._crash(step.consumer, step.silent, step.down_ms)
        elif isinstance(step, Leave):
            victim = self._pick(step.consumer)
            if victim is not None:
                self.consumers.remove(victim)
                victim.consumer.shutdown()
        elif isinstance(step, Join):
            self._join(step.revive)
        elif isinstance(step, SlowConsumer):
            self._slow(step.consumer, step.ms_per_message, step.for_ms)
        elif isinstance(step, FailPercent):
            target = self._pick(step.consumer)
            if target is not None:
                target.listener.fail_percent = step.percent
        elif isinstance(step, Retention):
            if self.host.broker is not None:
                self.host.broker.run_retention(manual=True)
        elif isinstance(step, BrokerRestart):
            self.host.restart(step.crash, step.down_ms)
        else:  # pragma: no cover - require_supported refused it
            raise TypeError(f"unknown step {step!r}")

    def _slow(self, index: int, busy_ms: int, for_ms: int | None) -> None:
        target = self._pick(index)
        if target is None:
            return
        target.listener.busy_max_ms = busy_ms
        if for_ms is not None:
            def back_to_normal() -> None:
                target.listener.busy_max_ms = self.config.busy_max_ms
            target.process.call_later(for_ms, back_to_normal)

    def _pick(self, index: int) -> SimConsumer | None:
        return self.consumers[index % len(self.consumers)] if self.consumers else None

    def _produce(self, count: int, queue: int | None) -> None:
        config = self.config
        broker = self.host.broker
        if broker is None:
            return  # the producer's sends fail while the broker is down: nothing was accepted
        body = bytes(config.body_bytes)
        tags = config.tags
        for _ in range(count):
            n = self._produced
            queue_id = n % config.queues if queue is None else queue % config.queues
            broker.send(Message(config.topic, body, queue_id, tags=tags[n % len(tags)],
                                properties={UNIQ_KEY: f"p-{n}"}))
            self._produced += 1

    def _new_client_id(self) -> str:
        rng = self.rng
        while True:
            client_id = f"10.0.{rng.randint(0, 255)}.{rng.randint(1, 254)}@{rng.randint(1000, 99999)}"
            if client_id not in self._ids:
                self._ids.add(client_id)
                return client_id

    def _join(self, revive: bool, client_id: str | None = None) -> None:
        """A consumer starts: ``client_id`` again, or (``revive``) the last crashed one's, or a new one."""
        config = self.config
        if client_id is not None:
            self.crashed.remove(client_id)
        elif revive and self.crashed:
            client_id = self.crashed.pop()
        else:
            client_id = self._new_client_id()
        self._incarnation += 1
        process = ProcessClock(self.clock)
        link = SimLink(self.clock, self.rng, config.network)
        gateway = InProcessGateway(self.host, process, f"{client_id}#{self._incarnation}", link)
        instance = MQClientInstance(client_id, gateway, process, trace=self.trace)
        listener = SimListener(self.rng, config.busy_max_ms, config.fail_percent, failures=self._failures,
                               always_fail=config.always_fail)
        consumer_config = ConsumerConfig(
            config.group, message_model=config.model, consume_from_where=config.consume_from_where,
            max_reconsume_times=config.max_reconsume_times,
        )
        consumer = (self.components.push_consumer or DefaultMQPushConsumer)(
            consumer_config, listener, instance, components=self.components, busy_ms=listener.busy_ms,
            offset_dir=self.offset_dir,
        )
        consumer.subscribe(config.topic, config.expression)
        consumer.start()
        self.consumers.append(SimConsumer(client_id, process, gateway, consumer, listener))

    def _crash(self, index: int, silent: bool, down_ms: int | None) -> None:
        victim = self._pick(index)
        if victim is None:
            return
        self.consumers.remove(victim)
        victim.process.kill()
        if silent:
            victim.gateway.abandon()
            self._last_silent_crash_ms = self.clock.now_ms()
        else:
            victim.gateway.close()
        victim.consumer.rec.record("CRASH")
        self.crashed.append(victim.client_id)
        if down_ms is not None:
            def restart() -> None:
                if victim.client_id in self.crashed:  # not revived by a Join meanwhile
                    self._join(revive=True, client_id=victim.client_id)
            self.clock.call_later(down_ms, restart)

    def _broker_down(self) -> None:
        for sim_consumer in self.consumers:
            sim_consumer.gateway.connection_lost()


def run_scenario(scenario: Scenario, components: ClientComponents | None = None) -> SimResult:
    """Run ``scenario`` recording to memory."""
    return Simulation(scenario, components=components).run()
