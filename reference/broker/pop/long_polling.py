"""PopLongPollingService: pops that found nothing wait for a message (seed 004 §3.2.1 step 6, §4.2.1).

Theory of operation
-------------------
A pop with ``poll_time_ms > 0`` that found nothing is held under the key (topic, group, queue id),
where queue id -1 stands for a pop of all queues. Its deadline is fixed when the broker first
received it: ``born time + poll time``. It is answered at the first of:

1. **an arrival** in a queue it reads, whose tag its subscription matches (the store's arrival
   listener), or a revive into the group's retry topic: the oldest matching held pop of the key is
   woken (one per arrival, as RocketMQ's ``notifyMessageArriving``), and re-executed. If another
   consumer took the message meanwhile it finds nothing and is held again, with the same deadline;
2. **its deadline**: answered POLLING_TIMEOUT, exactly then.

When more than ``pop_polling_size`` pops are already held under the key, a further one is answered
POLLING_FULL at once instead of being held (RocketMQ 5's PopLongPollingService compares the held count with
``>``, so the key holds popPollingSize + 1 at most).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from reference.broker.pop.config import PopConfig
from reference.broker.pop.protocol import ALL_QUEUES, PopChannel, PopMessageRequest
from reference.clock import Clock, TimerHandle
from reference.rules.filter import SubscriptionData


class PollingResult(enum.Enum):
    """PopMessageProcessor.polling's outcomes."""

    POLLING_SUC = "POLLING_SUC"
    POLLING_FULL = "POLLING_FULL"
    NOT_POLLING = "NOT_POLLING"


@dataclass(eq=False)
class HeldPop:
    request: PopMessageRequest
    channel: PopChannel
    subscription: SubscriptionData
    #: When the broker first received the request; the deadline counts from here.
    born_time: int
    timer: TimerHandle | None = None

    @property
    def deadline(self) -> int:
        return self.born_time + self.request.poll_time_ms

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.request.topic, self.request.consumer_group, self.request.queue_id)


class PopLongPollingService:
    def __init__(
        self,
        config: PopConfig,
        clock: Clock,
        wake: Callable[[HeldPop], None],
        expire: Callable[[HeldPop], None],
    ) -> None:
        self.config = config
        self.clock = clock
        self._wake = wake
        self._expire = expire
        self._table: dict[tuple[str, str, int], list[HeldPop]] = {}

    def held_count(self) -> int:
        return sum(len(v) for v in self._table.values())

    def polling(self, held: HeldPop) -> PollingResult:
        """Hold ``held`` until an arrival or its deadline, if it asked to wait and may."""
        now = self.clock.now_ms()
        if held.request.poll_time_ms <= 0 or now >= held.deadline:
            return PollingResult.NOT_POLLING
        waiting = self._table.setdefault(held.key, [])
        if len(waiting) > self.config.pop_polling_size:
            return PollingResult.POLLING_FULL
        waiting.append(held)
        held.timer = self.clock.call_later(held.deadline - now, lambda: self._on_deadline(held))
        return PollingResult.POLLING_SUC

    def _on_deadline(self, held: HeldPop) -> None:
        if self._remove(held):
            self._expire(held)

    def _remove(self, held: HeldPop) -> bool:
        waiting = self._table.get(held.key)
        if not waiting or held not in waiting:
            return False
        waiting.remove(held)
        if not waiting:
            del self._table[held.key]
        if held.timer is not None:
            held.timer.cancel()
            held.timer = None
        return True

    def notify_message_arriving(
        self,
        topic: str,
        queue_id: int | None,
        tags_code: int | None = None,
        group: str | None = None,
        exact: bool = False,
    ) -> None:
        """Wake, per waiting key of ``topic`` (and ``group`` if given) that reads ``queue_id``, the
        oldest held pop whose subscription matches ``tags_code`` (None matches all).

        A key reads the queue when its queue id is that queue or -1 (all queues); with ``exact`` only
        the key of that very queue id counts ("all queue pop can not notify specified queue pop, and
        vice versa", for the notification after a pop that left messages behind); ``queue_id`` None
        means any queue (a revive into the retry topic, which every pop of the group reads).
        """
        for key in [k for k in self._table if k[0] == topic and (group is None or k[1] == group)]:
            if queue_id is not None:
                readers = (queue_id,) if exact else (queue_id, ALL_QUEUES)
                if key[2] not in readers:
                    continue
            for held in list(self._table.get(key, ())):
                if held.subscription.matches(tags_code):
                    self._remove(held)
                    self._wake(held)
                    break

    def shutdown(self) -> None:
        """Drop every held pop without answering (its client times out), as a stopping broker does."""
        for waiting in self._table.values():
            for held in waiting:
                if held.timer is not None:
                    held.timer.cancel()
        self._table.clear()
