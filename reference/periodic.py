"""PeriodicTask: run a function every N ms on a :class:`reference.clock.Clock` (store, hold service, registry).

The store's background work (retention every 10 s, offset persistence every 5 s) is scheduled
through the clock rather than a thread, so a SimClock drives it deterministically and the store stays
single-threaded.
"""

from __future__ import annotations

from collections.abc import Callable

from reference.clock import Clock, TimerHandle


class PeriodicTask:
    """Runs ``action`` ``initial_delay_ms`` after :meth:`start`, then every ``interval_ms`` (measured
    from the end of the previous run, like scheduleWithFixedDelay). ``interval_ms`` may be a function,
    read after each run: a loop like RocketMQ's PullRequestHoldService reads its wait from the broker's
    configuration each time round, so a setting changed at run time applies from the next wait on."""

    def __init__(
        self, clock: Clock, initial_delay_ms: int, interval_ms: int | Callable[[], int],
        action: Callable[[], object],
    ) -> None:
        self._clock = clock
        self._initial_delay_ms = initial_delay_ms
        self._interval_ms = interval_ms
        self._action = action
        self._timer: TimerHandle | None = None

    def start(self) -> None:
        """Schedule the first run (no-op if already started)."""
        if self._timer is None:
            self._timer = self._clock.call_later(self._initial_delay_ms, self._run)

    def _run(self) -> None:
        try:
            self._action()
        finally:
            interval = self._interval_ms() if callable(self._interval_ms) else self._interval_ms
            self._timer = self._clock.call_later(interval, self._run)

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
