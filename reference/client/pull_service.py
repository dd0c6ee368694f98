"""PullMessageService: runs each PullRequest's next pull (seed 000, PullMessageService.run).

RocketMQ's service is a thread taking PullRequests from a blocking queue; here the queue is the
clock's timer queue: "put back immediately" is a zero-delay timer, "put back later" (flow control
50 ms, errors 3 s) a delayed one. The service also runs the consumer's other delayed tasks
(executeTaskLater), so stopping it stops them all.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from reference.client.pull_request import PullRequest
from reference.clock import Clock


class PullMessageService:
    def __init__(self, clock: Clock, dispatch: Callable[[PullRequest], object]) -> None:
        self.clock = clock
        self._dispatch = dispatch
        self.stopped = False

    def execute_pull_request_immediately(self, pull_request: PullRequest) -> None:
        self.clock.call_later(0, partial(self._run, pull_request))

    def execute_pull_request_later(self, pull_request: PullRequest, delay_ms: int) -> None:
        self.clock.call_later(delay_ms, partial(self._run, pull_request))

    def execute_task_later(self, task: Callable[[], object], delay_ms: int) -> None:
        self.clock.call_later(delay_ms, partial(self._run_task, task))

    def _run(self, pull_request: PullRequest) -> None:
        if not self.stopped:
            self._dispatch(pull_request)

    def _run_task(self, task: Callable[[], object]) -> None:
        if not self.stopped:
            task()

    def shutdown(self) -> None:
        self.stopped = True
