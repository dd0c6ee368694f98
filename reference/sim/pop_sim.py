"""POP simulation: one broker and N push-over-POP consumers on virtual time, with faults.

Theory of operation
-------------------
A *schedule* is data: producer bursts, consumer crashes (with a restart after ``down_ms``), slow
acknowledgements (the listener takes ``consume_ms`` per message for a while), failing listeners
(``LATER`` for the next n messages, which the consumer turns into a change of invisible time) and
broker restarts (clean shutdown, then a new broker on the same data directory). :func:`run` plays it
on a :class:`~reference.clock.SimClock`, then lets the system settle: every fault ends by itself, and
the run goes on until the group acknowledged every message sent (or ``max_ms`` passes), and a little
longer so that a wrong revive would show. Everything is recorded as a trace (schema v1); the same
schedule and seed give the same trace.

:func:`~reference.sim.judges.audit_pop` judges the trace against the POP requirements when the run ends.

:func:`random_schedule` draws a schedule from a seed, for the simulator's CLI-style use and for
benchmarks; the property suites generate schedules with Hypothesis so that failures shrink.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reference.broker.broker import BrokerComponents
from reference.broker.pop.config import PopConfig
from reference.broker.pop.protocol import PoppedMessage
from reference.client.pop.push_consumer import CONSUME_LATER, CONSUME_OK, PopPushConfig, PopPushConsumer
from reference.sim.engine import SimRun
from reference.sim.findings import Finding
from reference.sim.judges import audit_pop
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

TOPIC = "PopSimTopic"
GROUP = "PopSimGroup"
#: Small store segments and rare offset persistence keep one simulated run cheap.
SIM_STORE = dict(
    commit_log_segment_bytes=256 * 1024, consume_queue_units_per_segment=1024, offset_persist_interval_ms=60_000
)


# -- the schedule ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class PopSimConfig:
    consumers: int = 4
    queues: int = 4
    pop_share_queue_num: int = -1
    invisible_time_ms: int = 10_000
    poll_time_ms: int = 20_000
    batch_size: int = 8
    #: Time a healthy listener takes per message.
    fast_consume_ms: int = 5
    #: Give up waiting for the group to acknowledge everything after this much virtual time.
    max_ms: int = 30 * 60_000
    #: Keep running this long after the last acknowledgement, so a revive that should not happen shows.
    tail_ms: int = 30_000
    seed: int = 0


def slow_consume_choices(config: PopSimConfig) -> tuple[int, ...]:
    """Consumption times of a slow listener: acked in memory, acked after the checkpoint left
    memory (between the 3 s stay timeout and the invisible time), and too slow (expired)."""
    invisible = config.invisible_time_ms
    return (3_000, invisible * 85 // 100, 2 * invisible)


#: The steps this workload plays, and the fields it has no meaning for: its consumers are named, not members
#: of a rebalanced group (no Leave or Join); their applications fail by count (FailNext); its broker sees no
#: channel expire (no silent crash) and stores single messages.
POP_STEPS: dict[type, tuple[str, ...]] = {
    Produce: ("batch",), Crash: ("silent",), SlowConsumer: (), FailNext: (), BrokerRestart: (),
}


def random_schedule(seed: int, config: PopSimConfig, events: int = 12, span_ms: int = 120_000) -> list[Step]:
    """A schedule drawn from ``seed``: bursts, crashes, slow acks, failing listeners, broker restarts."""
    rng = random.Random(seed)
    out: list[Step] = []
    for _ in range(events):
        at = rng.randrange(span_ms)
        kind = rng.random()
        consumer = rng.randrange(config.consumers)
        if kind < 0.4:
            out.append(Produce(queue=rng.randrange(config.queues), count=rng.randint(1, 10), at_ms=at))
        elif kind < 0.6:
            out.append(Crash(consumer, rng.choice((0, 5_000, 30_000)), at_ms=at))
        elif kind < 0.8:
            slow = rng.choice(slow_consume_choices(config))
            out.append(SlowConsumer(consumer, slow, rng.choice((10_000, 60_000)), at_ms=at))
        elif kind < 0.93:
            out.append(FailNext(consumer, rng.randint(1, 3), at_ms=at))
        else:
            out.append(BrokerRestart(down_ms=rng.choice((0, 2_000)), at_ms=at))
    return sorted(out, key=lambda e: e.at_ms)


# -- running -----------------------------------------------------------------------------------
class TrackingSink(MemorySink):
    """A memory sink that also keeps the sent and acknowledged message ids as rows arrive."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: set[str] = set()
        self.acked: set[str] = set()

    def write(self, row: dict[str, Any]) -> None:
        super().write(row)
        if row["event"] == "SEND":
            self.sent.add(row["msg_id"])
        elif row["event"] == "ACK" and row.get("status") == "OK":
            self.acked.add(row["msg_id"])


@dataclass
class _ListenerState:
    slow_until: int = 0
    slow_ms: int = 0
    fail_next: int = 0


@dataclass
class PopSimResult:
    rows: list[dict[str, Any]]
    sent: set[str]
    acked: set[str]
    horizon_ms: int
    start_ms: int
    finished: bool
    config: PopSimConfig
    findings: list[Finding] = field(default_factory=list)


def run(
    schedule: Iterable[Step],
    config: PopSimConfig | None = None,
    components: BrokerComponents | None = None,
    pop_config: PopConfig | None = None,
    data_dir: str | Path | None = None,
) -> PopSimResult:
    """Play ``schedule`` and settle; returns the trace and the audit's findings."""
    config = config or PopSimConfig()
    sink = TrackingSink()
    with SimRun(f"pop-sim-{config.seed}", sink, MessageStoreConfig(**SIM_STORE), data_dir=data_dir,
                components=components, pop_config=pop_config, rng=random.Random(config.seed)) as sim:
        return _play(sim, sink, require_supported(schedule, "POP", POP_STEPS), config)


def _play(sim: SimRun, sink: TrackingSink, schedule: list[Step], config: PopSimConfig) -> PopSimResult:
    clock, host, trace, start = sim.clock, sim.host, sim.trace, sim.start_ms
    assert host.broker is not None
    host.broker.create_topic(TOPIC, config.queues)
    states = [_ListenerState() for _ in range(config.consumers)]
    push_config = PopPushConfig(
        batch_size=config.batch_size, invisible_time_ms=config.invisible_time_ms, poll_time_ms=config.poll_time_ms,
        pop_share_queue_num=config.pop_share_queue_num,
    )

    def listener_for(i: int):  # type: ignore[no-untyped-def]
        def listener(message: PoppedMessage, complete) -> None:  # type: ignore[no-untyped-def]
            state = states[i]
            now = clock.now_ms()
            delay = state.slow_ms if now < state.slow_until else config.fast_consume_ms
            status = CONSUME_OK
            if state.fail_next > 0:
                state.fail_next -= 1
                status = CONSUME_LATER
            clock.call_later(delay, lambda: complete(status))

        return listener

    consumers = [
        PopPushConsumer(host, clock, GROUP, TOPIC, f"c{i}", listener_for(i), push_config, trace=trace)
        for i in range(config.consumers)
    ]
    for consumer in consumers:
        consumer.start()

    produced = 0

    def apply(event: Step) -> None:
        nonlocal produced
        if isinstance(event, Produce):
            if host.broker is None:
                return  # the producer's send fails while the broker is down
            for _ in range(event.count):
                queue = produced if event.queue is None else event.queue
                host.broker.send(Message(TOPIC, b"m%d" % produced, queue % config.queues, tags="T"))
                produced += 1
        elif isinstance(event, Crash):
            consumer = consumers[event.consumer % config.consumers]
            if consumer.running:
                consumer.crash()
                if event.down_ms is not None:
                    clock.call_later(event.down_ms, lambda: _restart(consumer))
        elif isinstance(event, SlowConsumer):
            state = states[event.consumer % config.consumers]
            state.slow_ms = event.ms_per_message
            state.slow_until = clock.now_ms() + event.for_ms if event.for_ms is not None else FOREVER
        elif isinstance(event, FailNext):
            states[event.consumer % config.consumers].fail_next += event.count
        elif isinstance(event, BrokerRestart):
            host.restart(crash=event.crash, down_ms=event.down_ms)

    def _restart(consumer: PopPushConsumer) -> None:
        consumer.rec.record("RESTART")
        consumer.start()

    sim.play(schedule, apply)
    finished = sim.settle(lambda: sink.sent <= sink.acked, config.max_ms)
    clock.advance(config.tail_ms if finished else 0)
    horizon = clock.now_ms()
    for consumer in consumers:
        if consumer.running:
            consumer.shutdown()
    host.close()
    trace.end()
    result = PopSimResult(sink.rows, sink.sent, sink.acked, horizon, start, finished, config)
    result.findings = audit_pop(result.rows, GROUP, settle_ms=config.tail_ms)
    return result
