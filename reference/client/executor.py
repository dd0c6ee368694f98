"""ConsumeExecutor: the consume thread pool, on the clock (RocketMQ's consumeExecutor, consumeThreadMin 20).

A task has two moments: ``begin`` when a thread picks it up (the listener is called and decides the
outcome) and ``complete`` when the thread is done (the outcome is processed). Between them the task
holds a thread for ``busy_ms(messages)`` of clock time: zero by default, the listener's processing
time in the simulator, which is what lets a rebalance or a crash fall *between* a listener's start
and the processing of its result (seed 001 §5). At most ``threads`` tasks are busy at once; the rest
wait in FIFO order.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from functools import partial
from typing import Protocol

from reference.clock import Clock
from reference.store.message import StoredMessage


class ConsumeTask(Protocol):
    msgs: list[StoredMessage]

    def begin(self) -> bool:
        """Called when a thread takes the task; False when it has nothing to do (skipped)."""
        ...

    def complete(self) -> None: ...


#: How long a listener call on these messages keeps its thread busy, in ms.
BusyTime = Callable[[Sequence[StoredMessage]], int]


class ConsumeExecutor:
    def __init__(self, clock: Clock, threads: int, busy_ms: BusyTime | None = None) -> None:
        self.clock = clock
        self.threads = threads
        self.busy_ms = busy_ms
        self._waiting: deque[ConsumeTask] = deque()
        self._busy = 0
        self._scheduled = False
        self.stopped = False

    def submit(self, task: ConsumeTask) -> None:
        if self.stopped:
            return
        self._waiting.append(task)
        if not self._scheduled and self._busy < self.threads:
            self._scheduled = True
            self.clock.call_later(0, self._drain)

    def _drain(self) -> None:
        self._scheduled = False
        waiting, busy_ms = self._waiting, self.busy_ms
        while waiting and self._busy < self.threads and not self.stopped:
            task = waiting.popleft()
            if not task.begin():
                continue
            busy = busy_ms(task.msgs) if busy_ms is not None else 0
            if busy <= 0:
                task.complete()
            else:
                self._busy += 1
                self.clock.call_later(busy, partial(self._finish, task))

    def _finish(self, task: ConsumeTask) -> None:
        self._busy -= 1
        if self.stopped:
            return
        task.complete()
        if self._waiting and not self._scheduled:
            self._scheduled = True
            self.clock.call_later(0, self._drain)

    def shutdown(self) -> None:
        """Stop now (RocketMQ's awaitTerminationMillisWhenShutdown 0): queued and running tasks are
        abandoned, their messages stay uncommitted and are consumed again by the next owner."""
        self.stopped = True
        self._waiting.clear()
