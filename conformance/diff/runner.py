"""The lockstep run: each step of a program on target A, then on target B, compared at once; Hypothesis draws
the programs and shrinks the first divergence.

Each program runs in names of its own (topics and groups prefixed with the sequence number), so the targets
need no reset between programs. The first step whose observations differ (after the pair's normalisations)
ends the program: from there on the two states differ and later steps would only repeat it.
"""

from __future__ import annotations

import itertools
import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.errors import Flaky

from conformance.diff.avoid import Avoider
from conformance.diff.compare import Difference, compare
from conformance.diff.program import Program, programs
from conformance.diff.steps import LARGE_BODY_BYTES, MAX_LARGE_BODY_BYTES, Side, Step
from conformance.expectations import Avoidance, DiffRule
from conformance.targets import FullTarget, MalformedAnswer, Target, TargetError
from conformance.targets.control import ControlError
from conformance.targets.registry import open_target

_salts = itertools.count()
#: With clock control on both sides, every program starts at the same phase of the brokers' periodic work (the
#: hold service's 5 s check, the 10 s scans, the revive scan): a multiple of this since the broker last started.
#: A program that diverged then diverges again when Hypothesis runs it later in the search, so it shrinks.
PHASE_MS = 60_000


class TargetBroken(Exception):
    """A target failed in a way that is no answer at all (a lost connection, an internal error): the run
    cannot go on (exit 2), and no divergence is claimed."""


@dataclass(frozen=True)
class Divergence:
    """The first step of a program whose observations differ."""

    program: Program
    index: int
    a: dict[str, Any]
    b: dict[str, Any]
    difference: Difference
    #: Each step before it, with both observations (equal up to the rules), for the side-by-side listing.
    before: tuple[tuple[dict[str, Any], dict[str, Any]], ...] = ()

    @property
    def step(self) -> Step:
        return self.program.steps[self.index]


@dataclass
class Stats:
    sequences: int = 0
    steps: int = 0
    divergences: int = 0
    #: Sequences run before the first divergence was seen (None: none seen).
    first_at: int | None = None
    #: The shortest divergence seen so far (progress lines show it while shrinking).
    shortest: str = ""
    shortest_steps: int = 0
    #: How often each rule excused a difference.
    excused: dict[DiffRule, int] = field(default_factory=dict)
    #: How many steps each avoidance kept from running (conformance.diff.avoid).
    avoided: dict[Avoidance, int] = field(default_factory=dict)
    #: Steps run per step kind: what a run that found nothing covered.
    kinds: Counter[str] = field(default_factory=Counter)
    started: float = field(default_factory=time.monotonic)

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self.started


class Lockstep:
    """Runs programs on two targets in lockstep."""

    def __init__(self, a: FullTarget, b: FullTarget, rules: tuple[DiffRule, ...] = (),
                 on_sequence: Callable[[Stats], None] | None = None, avoid: tuple[Avoidance, ...] = ()) -> None:
        self.a, self.b = a, b
        self.large_bytes = large_body_bytes(a, b)
        self.rules = rules
        self.avoid = avoid
        self.stats = Stats()
        self._on_sequence = on_sequence
        # Names must not collide with an earlier run's on a server that outlives it (the pid), and must be as long
        # in every run: a topic's length is in every record's size, so it moves segment boundaries, and with them
        # what a retention step deletes. Three digits whatever the pid.
        self._salt = f"{os.getpid() % 1000:03d}x{next(_salts)}"
        #: Per side, the simulated instant its broker last started (clocked pairs only).
        self._origins: list[int | None] = [None, None]

    def run(self, program: Program) -> Divergence | None:
        """Run one program; its first divergence, or None."""
        self.stats.sequences += 1
        prefix = f"d{self._salt}s{self.stats.sequences}-"
        exact_time = "clock_control" in self.a.capabilities & self.b.capabilities
        expire = "retention_expire" in self.a.capabilities & self.b.capabilities
        sides = tuple(Side(target, prefix, program.queues, exact_time, self.large_bytes, expire)
                      for target in (self.a, self.b))
        before: list[tuple[dict[str, Any], dict[str, Any]]] = []
        if exact_time:
            self._align(sides)
        try:
            for side in sides:
                for i, queues in enumerate(program.queues):
                    _guard(side.target, side.target.create_topic, side.topic(i), queues)
            avoider = Avoider(self.avoid)
            for index, step in enumerate(program.steps):
                avoided = avoider.check(step, sides[0])
                if avoided is not None:
                    self.stats.avoided[avoided] = self.stats.avoided.get(avoided, 0) + 1
                    before.append(({"avoided": avoided.id}, {"avoided": avoided.id}))
                    continue
                a, b = (_observe(side, step, index) for side in sides)
                self.stats.steps += 1
                self.stats.kinds[step.kind] += 1
                difference = compare(step.kind, a, b, self.rules, vars(step))
                for rule in difference.excused:
                    self.stats.excused[rule] = self.stats.excused.get(rule, 0) + 1
                if difference.fields:
                    self.stats.divergences += 1
                    if self.stats.first_at is None:
                        self.stats.first_at = self.stats.sequences
                    if not self.stats.shortest_steps or index + 1 < self.stats.shortest_steps:
                        self.stats.shortest_steps = index + 1
                        self.stats.shortest = f"{step.kind} ({', '.join(difference.fields)})"
                    return Divergence(program, index, a, b, difference, tuple(before))
                before.append((a, b))
            return None
        finally:
            for i, side in enumerate(sides):
                if side.restarted_at is not None:
                    self._origins[i] = side.restarted_at
            if self._on_sequence is not None:
                self._on_sequence(self.stats)

    def _align(self, sides: tuple[Side, ...]) -> None:
        """Move each clock to the next multiple of :data:`PHASE_MS` since its broker last started."""
        for i, side in enumerate(sides):
            now = _guard(side.target, side.target.clock_now_ms)
            origin = self._origins[i]
            if origin is None:
                origin = self._origins[i] = now
            lag = (now - origin) % PHASE_MS
            if lag:
                _guard(side.target, side.target.advance, PHASE_MS - lag)


def open_pair(target: str, against: str, workdir: Path,
              store_settings: dict[str, object] | None = None) -> tuple[FullTarget, FullTarget]:
    """Open both targets; an in-process reference (or mutant) gets the other's segment sizes when that one
    tells them (capability ``store_layout``), so that a retention step deletes the same messages on both, and
    the MessageStoreConfig fields of ``store_settings`` (the other's expectations, ``settings_for``)."""
    a = _driven(open_target(target, str(workdir / "a"), store_settings=store_settings))
    try:
        layout = a.store_layout() if "store_layout" in a.capabilities else None
        b = _driven(open_target(against, str(workdir / "b"), layout=layout, store_settings=store_settings))
        if layout is None and "store_layout" in b.capabilities:
            a.close()
            a = _driven(open_target(target, str(workdir / "a2"), layout=b.store_layout(),
                                    store_settings=store_settings))
    except BaseException:
        a.close()
        raise
    return a, b


def _driven(target: Target) -> FullTarget:
    """``target`` as the steps drive it: each calls only methods of capabilities the target declares."""
    return cast(FullTarget, target)


def large_body_bytes(a: FullTarget, b: FullTarget) -> int:
    """Half the smaller commit-log segment of the two (at most MAX_LARGE_BODY_BYTES); the in-process
    conformance store's half segment when neither tells its layout."""
    sizes = [t.store_layout().commitlog_segment_bytes for t in (a, b) if "store_layout" in t.capabilities]
    return min(min(sizes) // 2, MAX_LARGE_BODY_BYTES) if sizes else LARGE_BODY_BYTES


def _observe(side: Side, step: Step, index: int) -> dict[str, Any]:
    """What ``side`` answered to ``step``; an answer outside the target's protocol is observed as such
    (``malformed``), so that the divergence it makes is listed, not raised."""
    try:
        return _guard(side.target, step.run, side, index)
    except MalformedAnswer as error:
        return {"malformed": str(error)}


def _guard(target: Target, call: Callable[..., Any], *args: Any) -> Any:
    """``call(*args)`` on ``target``; a failure that is not an answer is :class:`TargetBroken`."""
    try:
        return call(*args)
    except (TargetError, AssertionError):
        raise
    except (OSError, ConnectionError, TimeoutError, ControlError) as error:
        # ControlError: the runner could not do what the step asked of the broker (a restart that did not come
        # back): the target is gone, not diverging, and replaying the program to shrink it would only mislead.
        raise TargetBroken(f"{target.name}: {type(error).__name__}: {error}") from error


class _Found(Exception):
    """Raised inside the Hypothesis test so that it shrinks."""


@dataclass(frozen=True)
class SearchResult:
    stats: Stats
    #: The shrunk divergence (None: none found).
    divergence: Divergence | None
    #: The divergence as first found, before shrinking.
    first: Divergence | None
    #: True when the divergence did not reproduce while shrinking (a timing-dependent answer).
    flaky: bool = False


def search(lockstep: Lockstep, capabilities: frozenset[str], examples: int, seed: int, max_steps: int,
           without: frozenset[str] = frozenset()) -> SearchResult:
    """Draw up to ``examples`` programs from what both targets can run; shrink the first divergence."""
    found: list[Divergence] = []
    broken: list[TargetBroken] = []

    @settings(max_examples=examples, database=None, deadline=None, derandomize=False, verbosity=Verbosity.quiet,
              suppress_health_check=list(HealthCheck), phases=(Phase.generate, Phase.shrink),
              report_multiple_bugs=False, print_blob=False)
    @given(programs(capabilities, max_steps, without))
    def check(program: Program) -> None:
        if broken:
            return  # a broken target ends the search: the remaining examples pass at once
        try:
            divergence = lockstep.run(program)
        except TargetBroken as error:
            broken.append(error)
            return
        if divergence is not None:
            found.append(divergence)
            raise _Found

    try:
        hypothesis_seed(seed)(check)()
    except _Found:
        return SearchResult(lockstep.stats, found[-1], found[0])
    except Flaky:
        if broken:  # a target broke mid-search (a restart that did not come back): that is the answer, not this
            raise broken[0] from None
        if not found:
            raise
        shortest = min(found, key=lambda d: len(d.program.steps))
        return SearchResult(lockstep.stats, shortest, found[0], flaky=True)
    if broken:
        raise broken[0]
    return SearchResult(lockstep.stats, None, None)
