"""RebalanceService: when a client rebalances (seed 001 §3, §6).

Every ``interval_ms`` (20 s), and at once when woken: at start and when the broker notifies that the
group's membership changed. A wake-up replaces the pending periodic run, and the next periodic run
comes a full interval after the woken one, as RocketMQ's ``waitForRunning`` does.
"""

from __future__ import annotations

from collections.abc import Callable

from reference.clock import Clock, TimerHandle


class RebalanceService:
    def __init__(self, clock: Clock, interval_ms: int, action: Callable[[], object]) -> None:
        self.clock = clock
        self.interval_ms = interval_ms
        self._action = action
        self._timer: TimerHandle | None = None
        self._woken = False
        self.stopped = True

    def start(self) -> None:
        """The first periodic run is one interval away (a consumer's start wakes it sooner)."""
        self.stopped = False
        if self._timer is None:
            self._timer = self.clock.call_later(self.interval_ms, self._run)

    def wakeup(self) -> None:
        if self.stopped or self._woken:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._woken = True
        self._timer = self.clock.call_later(0, self._run)

    def _run(self) -> None:
        self._woken = False
        self._timer = None
        if self.stopped:
            return
        try:
            self._action()
        finally:
            if not self.stopped and self._timer is None:
                self._timer = self.clock.call_later(self.interval_ms, self._run)

    def shutdown(self) -> None:
        self.stopped = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
