"""The timed steps of a simulated schedule: what happens to the deployment, and when.

One vocabulary for the POP and permit workloads (the pull and rebalance workload still speaks its sequential
:mod:`.scenario` steps). A step names a consumer by its index in the workload's consumers; ``at_ms`` counts
from the start of the run.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Produce:
    """``count`` sends to ``queue``; each stores ``batch`` messages as one entry (permits: a batch entry)."""

    at_ms: int
    count: int
    queue: int = 0
    batch: int = 1


@dataclass(frozen=True)
class Crash:
    """The consumer dies without a word, and a new one with its name starts ``down_ms`` later."""

    at_ms: int
    consumer: int
    down_ms: int


@dataclass(frozen=True)
class SlowConsumer:
    """For ``for_ms`` the consumer takes ``ms_per_message`` for each message it handles."""

    at_ms: int
    consumer: int
    ms_per_message: int
    for_ms: int


@dataclass(frozen=True)
class FailNext:
    """The consumer's application fails its next ``count`` messages (POP: consume later, so it changes their
    invisible time; permits: a negative acknowledgement)."""

    at_ms: int
    consumer: int
    count: int


@dataclass(frozen=True)
class BrokerRestart:
    """A clean broker restart: down for ``down_ms``, then a new broker on the same data."""

    at_ms: int
    down_ms: int


Step = Produce | Crash | SlowConsumer | FailNext | BrokerRestart


def step_end_ms(step: Step) -> int:
    """When the step's effect is over (the fault ended), from the start of the run."""
    if isinstance(step, Crash | BrokerRestart):
        return step.at_ms + step.down_ms
    if isinstance(step, SlowConsumer):
        return step.at_ms + step.for_ms
    return step.at_ms
