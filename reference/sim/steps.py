"""The steps of a simulated schedule: what happens to the deployment, and when. One vocabulary for every
workload (pull and rebalance, POP, permits).

Every step carries ``at_ms``, its time from the start of the schedule, so faults with a duration (a consumer
down for a while, a slow spell, a broker restart) overlap as they would in a deployment. A workload plays the
steps it has a meaning for and refuses the others up front (:func:`require_supported`), naming the step.

A consumer is named by an index taken modulo the consumers at that moment, so every index is valid whatever
came before and a shrunk schedule stays meaningful. Hand-written and generated schedules are usually read as
a script: :func:`timeline` turns "produce 20, wait 3 s, crash consumer 1, ..." (steps, and integers for the
pauses between them) into timed steps; Hypothesis shrinks such a script by deleting items and lowering numbers.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields, replace


def _at() -> int:
    return field(default=0, kw_only=True)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Produce:
    """``count`` sends, round-robin over the queues (or all to ``queue``); each stores ``batch`` messages as
    one entry (permits: a batch entry)."""

    count: int
    queue: int | None = None
    batch: int = 1
    at_ms: int = _at()


@dataclass(frozen=True)
class Crash:
    """The consumer dies: no persist, no unregister. ``down_ms``: a consumer with its name starts again that
    much later (None: it stays down; the pull workload can bring it back with ``Join(revive=True)``).
    ``silent``: its host vanished too, so the broker notices only when the channel expires (120 s);
    otherwise the connection is reset."""

    consumer: int
    down_ms: int | None = None
    silent: bool = False
    at_ms: int = _at()


@dataclass(frozen=True)
class Leave:
    """The consumer shuts down gracefully: persist, unregister."""

    consumer: int
    at_ms: int = _at()


@dataclass(frozen=True)
class Join:
    """A consumer starts. ``revive``: the most recently crashed consumer restarts with its client id (and,
    broadcasting, its local offsets file); otherwise a new client joins."""

    revive: bool = False
    at_ms: int = _at()


@dataclass(frozen=True)
class SlowConsumer:
    """The consumer's application now takes ``ms_per_message`` per message (the pull workload's listener
    draws each call's time at random up to it), for ``for_ms`` (None: from now on)."""

    consumer: int
    ms_per_message: int
    for_ms: int | None = None
    at_ms: int = _at()


@dataclass(frozen=True)
class FailNext:
    """The consumer's application fails its next ``count`` messages (POP: consume later, so it changes their
    invisible time; permits: a negative acknowledgement)."""

    consumer: int
    count: int
    at_ms: int = _at()


@dataclass(frozen=True)
class FailPercent:
    """The consumer's listener now fails ``percent`` % of its calls (capped per message, so a run ends)."""

    consumer: int
    percent: int
    at_ms: int = _at()


@dataclass(frozen=True)
class Retention:
    """The broker deletes expired commit-log segments now (every segment but the newest)."""

    at_ms: int = _at()


@dataclass(frozen=True)
class BrokerRestart:
    """The broker stops (killed when ``crash``, else cleanly) and a new broker opens on the same data
    ``down_ms`` later."""

    crash: bool = False
    down_ms: int = 1_000
    at_ms: int = _at()


Step = Produce | Crash | Leave | Join | SlowConsumer | FailNext | FailPercent | Retention | BrokerRestart


#: A slow spell with no end (``SlowConsumer.for_ms`` None), as an instant no run reaches.
FOREVER = 2**62


def timeline(*script: Step | int) -> tuple[Step, ...]:
    """Timed steps from a script: each step happens when the pauses (integers, in ms) before it are over;
    steps with no pause between them happen at the same instant, in the order written."""
    now = 0
    steps: list[Step] = []
    for item in script:
        if isinstance(item, int):
            now += item
        else:
            steps.append(replace(item, at_ms=now))
    return tuple(steps)


def step_end_ms(step: Step) -> int:
    """When the step's effect is over (the fault ended), from the start of the schedule."""
    if isinstance(step, BrokerRestart) or (isinstance(step, Crash) and step.down_ms is not None):
        return step.at_ms + step.down_ms  # type: ignore[operator]
    if isinstance(step, SlowConsumer) and step.for_ms is not None:
        return step.at_ms + step.for_ms
    return step.at_ms


def require_supported(steps: Iterable[Step], workload: str, supported: dict[type, tuple[str, ...]]) -> list[Step]:
    """The steps in time order, or ValueError naming the first one ``workload`` cannot play. ``supported``
    maps each step type the workload plays to the fields it has no meaning for (they must keep their
    defaults)."""
    ordered = sorted(steps, key=lambda s: s.at_ms)
    for step in ordered:
        kind = type(step)
        if kind not in supported:
            names = ", ".join(t.__name__ for t in supported)
            raise ValueError(f"the {workload} workload cannot play {step!r}: its steps are {names}")
        defaults = {f.name: f.default for f in fields(step)}
        for name in supported[kind]:
            if getattr(step, name) != defaults[name]:
                raise ValueError(f"the {workload} workload cannot play {step!r}: {name} has no meaning there")
    return ordered
