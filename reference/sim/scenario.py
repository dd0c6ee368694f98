"""Scenarios: what a simulated pull-and-rebalance run does, as data (a configuration and timed steps of
:mod:`reference.sim.steps`, usually written as a script with :func:`~reference.sim.steps.timeline`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reference.client.config import ConsumeFromWhere, MessageModel
from reference.sim.network import NetworkConfig
from reference.sim.steps import Step


@dataclass(frozen=True)
class SimConfig:
    seed: int = 0
    topic: str = "T"
    queues: int = 4
    group: str = "G"
    #: Consumers started at time 0 (one every ``start_gap_ms``).
    consumers: int = 3
    start_gap_ms: int = 0
    model: MessageModel = MessageModel.CLUSTERING
    #: The simulator starts from the first offset so that a broker that lost a not-yet-persisted
    #: offset never makes a queue skip messages (see ALO requirements).
    consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    expression: str = "*"
    #: Tags given to produced messages, in turn (None: untagged).
    tags: tuple[str | None, ...] = (None,)
    body_bytes: int = 64
    network: NetworkConfig = field(default_factory=NetworkConfig)
    #: Initial listener behaviour of every consumer.
    busy_max_ms: int = 50
    fail_percent: int = 0
    #: Unique ids (``p-<n>``, the n-th produced message) that always fail: they end in %DLQ%.
    always_fail: frozenset[str] = frozenset()
    max_reconsume_times: int = 16
    #: Store segments small enough that retention deletes something.
    commit_log_segment_bytes: int = 16 * 1024
    consume_queue_units_per_segment: int = 64
    #: After the last step: run at least this long, then until every message is settled and every
    #: queue has had one owner for ``stable_ms``, but no longer than ``max_settle_ms`` more.
    min_settle_ms: int = 30_000
    max_settle_ms: int = 300_000
    #: Ownership is settled once no queue changed hands for this long (two rebalance rounds and slack).
    stable_ms: int = 45_000


@dataclass(frozen=True)
class Scenario:
    config: SimConfig = field(default_factory=SimConfig)
    steps: tuple[Step, ...] = ()

    def describe(self) -> str:
        """The schedule as one readable line per step."""
        lines = [f"config: {self.config}"]
        lines += [f"  {i:2d}. {step.at_ms / 1000:>7.3f} s  {step}" for i, step in enumerate(self.steps)]
        return "\n".join(lines)
