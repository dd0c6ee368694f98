"""Scenarios: what a simulated run does, as data (a configuration and a list of steps).

Steps are applied in order; only :class:`Wait` moves virtual time, so a schedule reads like a script
("produce 20, wait 3 s, crash consumer 1, ...") and shrinks well: Hypothesis deletes steps and lowers
numbers. A consumer is named by its index among the consumers alive at that moment, taken modulo
their number, so every index is valid whatever came before (a shrunk schedule stays meaningful).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reference.client.config import ConsumeFromWhere, MessageModel
from reference.sim.network import NetworkConfig


@dataclass(frozen=True)
class Produce:
    """A producer burst: ``count`` messages, round-robin over the queues (or all to ``queue``)."""

    count: int
    queue: int | None = None


@dataclass(frozen=True)
class Wait:
    ms: int


@dataclass(frozen=True)
class Crash:
    """Consumer ``consumer`` dies: no persist, no unregister. ``silent``: the host vanished too, so
    the broker only notices when the channel expires (120 s); otherwise the connection is reset."""

    consumer: int
    silent: bool = False


@dataclass(frozen=True)
class Leave:
    """Consumer ``consumer`` shuts down gracefully: persist, unregister."""

    consumer: int


@dataclass(frozen=True)
class Join:
    """A consumer starts. ``revive``: the most recently crashed consumer restarts with its client id
    (and, broadcasting, its local offsets file); otherwise a new client joins."""

    revive: bool = False


@dataclass(frozen=True)
class SlowListener:
    """Consumer ``consumer``'s listener now takes up to ``busy_ms`` per call."""

    consumer: int
    busy_ms: int


@dataclass(frozen=True)
class FailingListener:
    """Consumer ``consumer``'s listener now fails ``percent`` % of its calls (capped per message)."""

    consumer: int
    percent: int


@dataclass(frozen=True)
class Retention:
    """The broker deletes expired commit-log segments now (every segment but the newest)."""


@dataclass(frozen=True)
class BrokerRestart:
    crash: bool = False
    down_ms: int = 1_000


Step = Produce | Wait | Crash | Leave | Join | SlowListener | FailingListener | Retention | BrokerRestart


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
        lines += [f"  {i:2d}. {step}" for i, step in enumerate(self.steps)]
        return "\n".join(lines)
