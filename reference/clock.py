"""Clocks: the only way core code learns the time or waits.

Theory of operation
-------------------
Every time-dependent rule in the reference (long-poll timeouts, the hold service's 5 s check, channel
expiry, retention hours, invisibility) is written against the :class:`Clock` protocol. Two clocks exist:

* :class:`RealClock` reads the wall clock and schedules timers on the running asyncio loop; the
  servers in ``reference.net`` use it.
* :class:`SimClock` holds virtual time and a deterministic timer queue. Nothing happens until the
  driver calls :meth:`SimClock.advance` / :meth:`SimClock.run_until`; timers due at the same instant
  fire in the order they were scheduled. Tests, property suites and the simulator use it so that a
  schedule that failed once fails the same way every time.

Times are integer milliseconds since the Unix epoch, as RocketMQ keeps them.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from functools import partial
from typing import Protocol

#: Virtual time at which a fresh :class:`SimClock` starts (2023-11-14T22:13:20Z): far enough from 0
#: that "timestamp 0" bugs show, fixed so that runs are reproducible.
SIM_EPOCH_MS = 1_700_000_000_000


class TimerHandle(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    """What core code may ask of time."""

    def now_ms(self) -> int:
        """Current time in milliseconds since the epoch."""
        ...

    def call_later(self, delay_ms: int, callback: Callable[[], object]) -> TimerHandle:
        """Run ``callback`` once, ``delay_ms`` from now (0 means "as soon as the driver can")."""
        ...


class RealClock:
    """Wall-clock time; timers run on the asyncio loop that is running when they are scheduled."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def call_later(self, delay_ms: int, callback: Callable[[], object]) -> TimerHandle:
        loop = asyncio.get_running_loop()
        return loop.call_later(max(0, delay_ms) / 1000.0, callback)


class _Timer:
    """A scheduled callback; cancelling it leaves it in the queue, skipped when it comes up."""

    __slots__ = ("callback", "cancelled")

    def __init__(self, callback: Callable[[], object]) -> None:
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class SimClock:
    """Virtual time with a deterministic timer queue (ties broken by scheduling order).

    The queue holds ``(due_ms, seq, timer)`` tuples: the heap compares the two integers in C. (A dataclass
    ordered on the same two fields compared them in Python, a third of the time of a 73-hour advance with the
    broker's periodic services running: the conformance suite's retention tests spend seconds there.)"""

    def __init__(self, start_ms: int = SIM_EPOCH_MS) -> None:
        self._now = start_ms
        self._queue: list[tuple[int, int, _Timer]] = []
        self._seq = itertools.count()

    def now_ms(self) -> int:
        return self._now

    def call_later(self, delay_ms: int, callback: Callable[[], object]) -> _Timer:
        if delay_ms < 0:
            raise ValueError(f"delay_ms must be >= 0, got {delay_ms}")
        timer = _Timer(callback)
        heapq.heappush(self._queue, (self._now + delay_ms, next(self._seq), timer))
        return timer

    def next_due_ms(self) -> int | None:
        """When the next live timer is due, or None when nothing is scheduled."""
        queue = self._queue
        while queue and queue[0][2].cancelled:
            heapq.heappop(queue)
        return queue[0][0] if queue else None

    def run_until(self, t_ms: int) -> int:
        """Fire every timer due at or before ``t_ms`` in order, then set the time to ``t_ms``.

        Timers scheduled by callbacks are honoured if they fall inside the window. Returns how
        many timers fired.
        """
        if t_ms < self._now:
            raise ValueError(f"time cannot go backwards: now {self._now}, asked {t_ms}")
        fired = 0
        queue, pop = self._queue, heapq.heappop
        while queue:
            due, _, timer = queue[0]
            if due > t_ms:
                break
            pop(queue)
            if timer.cancelled:
                continue
            self._now = due
            timer.callback()
            fired += 1
        self._now = t_ms
        return fired

    def advance(self, delta_ms: int) -> int:
        """Move virtual time forward by ``delta_ms``, firing due timers."""
        return self.run_until(self._now + delta_ms)

    def run_all(self, limit: int = 1_000_000) -> int:
        """Fire timers until none is left (bounded, so a self-rescheduling timer cannot hang a test)."""
        fired = 0
        while fired < limit:
            due = self.next_due_ms()
            if due is None:
                return fired
            fired += self.run_until(due)
        raise RuntimeError(f"timer queue still busy after {limit} timers")


class ProcessClock:
    """One process's view of a shared clock (virtual or real).

    Every timer a client or the broker schedules goes through its process's clock. Killing the process (a
    crash) makes all of them inert at once, so a crashed component never acts again, without the simulator
    or the server that crashed it having to know what it had scheduled: no persist, no unregister, no late
    callback."""

    __slots__ = ("_clock", "alive", "now_ms")

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self.alive = True
        #: Reading the time is the hottest call of a simulation (every trace row): bind it directly.
        self.now_ms: Callable[[], int] = clock.now_ms

    def call_later(self, delay_ms: int, callback: Callable[[], object]) -> TimerHandle:
        return self._clock.call_later(delay_ms, partial(self._fire, callback))

    def _fire(self, callback: Callable[[], object]) -> None:
        if self.alive:
            callback()

    def kill(self) -> None:
        self.alive = False
