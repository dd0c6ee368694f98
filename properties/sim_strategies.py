"""Hypothesis strategies for simulated schedules, and the runner the client property suites share.

A schedule is drawn as a script of steps and pauses, made timed by ``reference.sim.steps.timeline``;
Hypothesis shrinks it by deleting items and lowering numbers, and every consumer index is taken modulo
the live consumers, so a shrunk schedule still means something. :func:`run_and_check` runs one
scenario and, when a check fails, attaches the schedule, the findings and a timeline of the rows around
the first finding to the failure with ``note()`` (Hypothesis prints notes for the shrunk example only).

:func:`random_scenario` draws the same kind of schedule from a plain seed, for the fixed-count runs
(``test_three_consumer_group_loses_nothing``) and benchmarks that want N schedules, not a search.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable

from hypothesis import note
from hypothesis import strategies as st

from reference.client.components import ClientComponents
from reference.client.config import MessageModel
from reference.sim.judges import CheckReport, check_trace
from reference.sim.network import NetworkConfig
from reference.sim.scenario import Scenario, SimConfig
from reference.sim.simulation import SimResult, Simulation
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
    timeline,
)

#: Consumer indexes are taken modulo the live consumers; a small range keeps shrinking readable.
_CONSUMER = st.integers(0, 3)
WAITS = (10, 200, 1_000, 5_000, 20_000)

produce = st.builds(Produce, st.integers(1, 40))
#: A pause in the script (time passing between two steps).
wait = st.sampled_from(WAITS)
crash = st.builds(Crash, _CONSUMER, silent=st.booleans())
leave = st.builds(Leave, _CONSUMER)
join = st.builds(Join, st.booleans())
slow = st.builds(SlowConsumer, _CONSUMER, st.sampled_from((0, 300, 2_000)))
failing = st.builds(FailPercent, _CONSUMER, st.sampled_from((0, 20, 60)))
retention = st.just(Retention())
broker_restart = st.builds(BrokerRestart, st.booleans(), st.sampled_from((100, 3_000)))

#: Membership faults: what rebalance drop semantics are about.
membership_steps = st.one_of(produce, wait, crash, leave, join, slow)
#: Everything the simulator can do.
all_steps = st.one_of(produce, wait, crash, leave, join, slow, failing, retention, broker_restart)

#: A loss-free network, or one that drops 5 % of messages and fails 5 % of synchronous calls.
networks = st.sampled_from((NetworkConfig(), NetworkConfig(drop_rate=0.05, sync_fault_rate=0.05)))


def configs(
    model: MessageModel = MessageModel.CLUSTERING, consumers: tuple[int, int] = (1, 3), **fixed: object
) -> st.SearchStrategy[SimConfig]:
    """Few, coarse choices: every drawn value is a node Hypothesis shrinks and explains. ``fixed``
    sets other SimConfig fields (such as the settle times) to constants."""
    drawn: dict[str, st.SearchStrategy[object]] = {
        "seed": st.integers(0, 255),
        "consumers": st.integers(*consumers),
        "queues": st.sampled_from((4, 3)),
        "network": networks,
        "busy_max_ms": st.sampled_from((50, 1_000)),
    }
    drawn.update({name: st.just(value) for name, value in fixed.items()})
    return st.builds(SimConfig, model=st.just(model), **drawn)


def scenarios(
    steps: st.SearchStrategy[Step | int] = all_steps, model: MessageModel = MessageModel.CLUSTERING,
    consumers: tuple[int, int] = (1, 3), max_steps: int = 12, fixed: dict[str, object] | None = None,
) -> st.SearchStrategy[Scenario]:
    """``fixed`` sets SimConfig fields to constants: a check that needs no quiescence (drop
    semantics) runs much shorter simulations, and every field not drawn is one node fewer to
    shrink and explain."""
    config = configs(model, consumers, **(fixed or {}))
    return st.builds(Scenario, config, st.lists(steps, max_size=max_steps).map(lambda script: timeline(*script)))


class _Deferred:
    """A note built only if Hypothesis reports it (the shrunk example): while it shrinks, Hypothesis
    traces every run, and formatting a timeline each time would be most of the cost."""

    def __init__(self, build: Callable[[], str]) -> None:
        self._build = build

    def __repr__(self) -> str:
        return self._build()


def run_and_check(
    scenario: Scenario, components: ClientComponents | None = None, checks: Iterable[str] | None = None,
    requirements: Iterable[str] | None = None,
) -> tuple[SimResult, CheckReport]:
    """Run ``scenario``; assert no finding (of ``requirements``, if given), noting a timeline if any."""
    result = Simulation(scenario, components=components).run()
    assert result.rows is not None
    report = check_trace(result.rows, **({"only": checks} if checks is not None else {}))
    wanted = set(requirements) if requirements is not None else None
    findings = [f for f in report.findings if wanted is None or f.requirement in wanted]
    if findings:
        first = findings[0]
        note(_Deferred(lambda: "\n".join((
            scenario.describe(), report.summary(),
            f"timeline around the first finding ({first.kind}, queue {first.queue}, message {first.msg_id}):",
            result.timeline(limit=120, queue=first.queue, msg_id=first.msg_id),
        ))))
    assert not findings, f"{len(findings)} finding(s), first: [{first.requirement}] {first.message}"
    return result, report


def random_scenario(
    seed: int, model: MessageModel = MessageModel.CLUSTERING, consumers: int = 3, max_steps: int = 14,
    faults: tuple[str, ...] = ("crash", "join", "leave"),
) -> Scenario:
    """A schedule drawn from ``seed`` alone: producer bursts and pauses mixed with ``faults``
    (any of crash, join, leave, slow, failing, retention, broker_restart)."""
    rng = random.Random(seed)
    steps: list[Step | int] = []
    for _ in range(rng.randint(4, max_steps)):
        kind = rng.choice(("produce", "produce", "wait", "wait", *faults))
        if kind == "produce":
            steps.append(Produce(rng.randint(1, 40)))
        elif kind == "wait":
            steps.append(rng.choice(WAITS))
        elif kind == "crash":
            steps.append(Crash(rng.randint(0, 3), silent=rng.random() < 0.3))
        elif kind == "join":
            steps.append(Join(rng.random() < 0.3))
        elif kind == "leave":
            steps.append(Leave(rng.randint(0, 3)))
        elif kind == "slow":
            steps.append(SlowConsumer(rng.randint(0, 3), rng.choice((0, 300, 2_000))))
        elif kind == "failing":
            steps.append(FailPercent(rng.randint(0, 3), rng.choice((0, 20, 60))))
        elif kind == "retention":
            steps.append(Retention())
        elif kind == "broker_restart":
            steps.append(BrokerRestart(rng.random() < 0.5, rng.choice((100, 3_000))))
        else:
            raise ValueError(f"unknown fault kind {kind!r}")
    return Scenario(SimConfig(seed=seed, consumers=consumers, model=model), timeline(*steps))
