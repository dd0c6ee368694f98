"""Simulated time over a wire: how a remoting target moves a runner's clock and times the requests it held.

A broker started with ``mqtck broker --remoting --control --sim-clock`` moves its clock only when its control
channel is told to (``POST /clock/advance``). Over the wire a client cannot see *when* an answer was written,
only that it arrived; so the runner stops its clock at the first instant at which it answered a held request and
says how many it answered there. Every answer then belongs to an instant this side knows: one that arrives while
the clock stands still was written at the current instant (woken by a send, or answered at once), one that
arrives during an advance at the instant that advance stopped at. A hold is measured in simulated milliseconds
exactly, as the in-process reference reports it, so ``mqtck diff`` compares ``held_ms`` across the wire too.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from .control import ControlClient

#: How long to wait (real time) for the answers the runner says it wrote at the instant it stopped at: they are
#: on their way over loopback, so this bound is only reached when an answer was not for this side.
ANSWER_WAIT_S = 2.0


@dataclass
class HoldStamp:
    """When (simulated ms) a held request was sent and when its answer was written."""

    sent_ms: int
    answered_ms: int | None = None

    @property
    def held_ms(self) -> int:
        if self.answered_ms is None:
            raise RuntimeError("the answer has not arrived")
        return self.answered_ms - self.sent_ms


class SimulatedTime:
    """The runner's clock as this side drives it; thread-safe (answers arrive on the connection's reader
    thread while the caller advances)."""

    def __init__(self, control: ControlClient) -> None:
        self._control = control
        self._lock = threading.Condition()
        #: The runner's simulated time, as of the last advance.
        self.now_ms, _ = control.advance(0)
        self._advancing = False
        #: Answers that arrived during an advance: their instant is the one it stops at.
        self._unstamped: list[HoldStamp] = []
        self._arrivals = 0

    def stamp(self) -> HoldStamp:
        """A held request is being sent now (the clock stands still: the runner handles it at this instant)."""
        with self._lock:
            return HoldStamp(self.now_ms)

    def arrived(self, stamp: HoldStamp) -> None:
        """The answer of ``stamp``'s request arrived (called on the connection's reader thread)."""
        with self._lock:
            self._arrivals += 1
            if self._advancing:
                self._unstamped.append(stamp)
            else:
                stamp.answered_ms = self.now_ms
            self._lock.notify_all()

    def advance(self, ms: int) -> None:
        """Move the runner's clock ``ms`` forward, one stop per instant at which it answered held requests; at
        each stop, wait for those answers to arrive, so that each is stamped with its instant."""
        remaining = ms
        while True:
            with self._lock:
                self._advancing = True
                before = self._arrivals
            try:
                now, answered = self._control.advance(remaining)
            except BaseException:
                with self._lock:
                    self._advancing = False
                raise
            with self._lock:
                self._advancing = False
                remaining -= now - self.now_ms
                self.now_ms = now
                for stamp in self._unstamped:
                    stamp.answered_ms = now
                self._unstamped.clear()
            if answered:
                with self._lock:
                    expected = before + answered
                    self._lock.wait_for(lambda: self._arrivals >= expected, timeout=ANSWER_WAIT_S)  # noqa: B023
            if not answered or remaining <= 0:
                return
