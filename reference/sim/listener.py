"""SimListener: an application listener with a processing time and an injectable failure rate.

``busy_ms`` (the executor's busy-time function) draws each call's processing time uniformly from
``[0, busy_max_ms]``; a call fails with probability ``fail_percent`` (half of the failures answer
RECONSUME_LATER, half raise), but never more than ``max_failures`` times for one message, so that
every message is eventually consumed and a run can quiesce. ``always_fail`` names messages (by
unique id) that always fail, which drives them to the dead-letter topic.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from reference.client.consume_service import ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus
from reference.store.message import StoredMessage

#: Default cap on failures per message (1 + 10 s + 30 s + 60 s of retry delay at most).
MAX_FAILURES_PER_MESSAGE = 3


class ListenerFailure(RuntimeError):
    """What a failing simulated listener raises."""


class SimListener:
    def __init__(self, rng: random.Random, busy_max_ms: int = 0, fail_percent: int = 0,
                 max_failures: int = MAX_FAILURES_PER_MESSAGE, failures: dict[str, int] | None = None,
                 always_fail: frozenset[str] = frozenset()) -> None:
        """``failures`` (message id -> failures so far) may be shared by a group's listeners, so the
        cap holds per message across consumers."""
        self._rng = rng
        self.busy_max_ms = busy_max_ms
        self.fail_percent = fail_percent
        self.max_failures = max_failures
        self.failures: dict[str, int] = failures if failures is not None else {}
        self.always_fail = always_fail

    def busy_ms(self, msgs: Sequence[StoredMessage]) -> int:
        return self._rng.randint(0, self.busy_max_ms) if self.busy_max_ms > 0 else 0

    def consume_message(
        self, msgs: list[StoredMessage], context: ConsumeConcurrentlyContext
    ) -> ConsumeConcurrentlyStatus:
        if self.always_fail and any(m.unique_id in self.always_fail for m in msgs):
            return ConsumeConcurrentlyStatus.RECONSUME_LATER
        if self.fail_percent and self._rng.randrange(100) < self.fail_percent:
            key = msgs[0].unique_id
            count = self.failures.get(key, 0)
            if count < self.max_failures:
                self.failures[key] = count + 1
                if self._rng.random() < 0.5:
                    raise ListenerFailure(f"simulated failure of {key}")
                return ConsumeConcurrentlyStatus.RECONSUME_LATER
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS
