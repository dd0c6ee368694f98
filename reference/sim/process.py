"""ProcessClock: one simulated process's view of the shared virtual clock.

Every timer a client or the broker schedules goes through its process's clock. Killing the process
(a crash) makes all of them inert at once, so a crashed component never acts again, without the
simulator having to know what it had scheduled: no persist, no unregister, no late callback.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from reference.clock import SimClock, TimerHandle


class ProcessClock:
    __slots__ = ("_clock", "alive", "now_ms")

    def __init__(self, clock: SimClock) -> None:
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
