"""PullRequestHoldService: long polling (seed 000).

Theory of operation
-------------------
A pull that found nothing (PULL_NOT_FOUND) and may suspend is *held* here, keyed ``topic@queueId``.
A held request is answered exactly once, by re-executing it with suspending forbidden, at the
first of:

1. **a matching arrival**: the store's arrival listener reports a new message in the queue whose
   tags hash code passes the request's filter (only while long polling is on; RocketMQ's dispatch
   notifies only then). A non-matching arrival never wakes it.
2. **a check that finds a match**: every ``hold_check_interval_ms`` (5 s long polling, 1 s short)
   each held request whose queue grew is woken if a unit after its offset passes its filter. Here
   we look at the consume-queue tag codes instead of waking on any growth as RocketMQ's periodic
   check does, so that non-matching traffic never answers a request early.
3. **its deadline at a check**: at the first check at or after ``suspend time + timeout``.

So a held request is never answered later than its timeout plus one check interval.

The lost wake-up (RocketMQ issue #7358): a message can arrive after the processor read "not found"
and before the request sits in the table; its arrival notification then finds nobody and the
request sleeps until the next check. :meth:`suspend_pull_request` therefore looks again *after*
inserting the request, and wakes it at once if a matching message is already there.

This module never answers anything itself: ``wake`` (given by the broker) re-executes the request
and delivers the response.
"""

from __future__ import annotations

from collections.abc import Callable

from reference.broker.config import BrokerConfig
from reference.broker.pull_processor import HeldPullRequest
from reference.clock import Clock
from reference.periodic import PeriodicTask
from reference.store.store import MessageStore

#: How many consume-queue units after a held request's offset are examined for a match. A pull
#: re-executed on wake-up scans at most ``max(16000, maxMsgNums*20)`` bytes of units (seed 002), so a
#: match further away could not be returned by that pull anyway.
MIN_MATCH_SCAN_UNITS = 16_000 // 20


class PullRequestHoldService:
    def __init__(
        self,
        store: MessageStore,
        config: BrokerConfig,
        clock: Clock,
        wake: Callable[[HeldPullRequest], None],
    ) -> None:
        self.store = store
        self.config = config
        self.clock = clock
        self._wake = wake
        self._table: dict[tuple[str, int], list[HeldPullRequest]] = {}
        # The wait is read from the configuration after every check, as RocketMQ's loop does: switching long
        # polling off or on at run time takes effect from the next wait on.
        self._checker = PeriodicTask(clock, config.hold_check_interval_ms, lambda: config.hold_check_interval_ms,
                                     self.check_hold_requests)

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        """Schedule the periodic check and listen for arrivals (which wake only while long polling is on)."""
        self.store.add_arrival_listener(self.on_message_arriving)
        self._checker.start()

    def shutdown(self) -> None:
        self._checker.cancel()

    # -- the rule ------------------------------------------------------------------------------
    def held_count(self) -> int:
        return sum(len(v) for v in self._table.values())

    def suspend_pull_request(self, held: HeldPullRequest) -> None:
        """Hold ``held``, then look once more so an arrival in between is not missed (#7358)."""
        key = (held.request.topic, held.request.queue_id)
        self._table.setdefault(key, []).append(held)
        newest = self.store.get_max_offset_in_queue(*key)
        if newest > held.pull_from_this_offset and self._has_match(held, newest):
            self._table[key].remove(held)
            self._wake(held)

    def on_message_arriving(
        self, topic: str, queue_id: int, max_offset: int, tags_code: int | None, store_timestamp: int
    ) -> None:
        """The store's arrival listener: a message is in the consume queue; wake matching requests. With long
        polling off an arrival wakes nothing: RocketMQ's dispatch asks ``isLongPollingEnable()`` before each
        notification, so the setting can change at run time (``reference.broker.settings``)."""
        if self.config.long_polling_enable:
            self.notify_message_arriving(topic, queue_id, max_offset, tags_code)

    def check_hold_requests(self) -> None:
        """The periodic check: wake requests with a match or past their deadline."""
        for topic, queue_id in list(self._table):
            self.notify_message_arriving(topic, queue_id, self.store.get_max_offset_in_queue(topic, queue_id))

    def notify_message_arriving(
        self, topic: str, queue_id: int, max_offset: int, tags_code: int | None = None
    ) -> None:
        """Wake held requests of the queue that can now be answered.

        ``tags_code`` is the arriving message's code (listener) or None (periodic check, where the
        consume queue is examined instead).
        """
        key = (topic, queue_id)
        requests = self._table.pop(key, None)
        if not requests:
            return
        keep: list[HeldPullRequest] = []
        now = self.clock.now_ms()
        for held in requests:
            newest = max_offset
            if newest <= held.pull_from_this_offset:
                newest = self.store.get_max_offset_in_queue(topic, queue_id)
            if newest > held.pull_from_this_offset:
                match = (
                    held.subscription.matches(tags_code)
                    if tags_code is not None
                    else self._has_match(held, newest)
                )
                if match:
                    self._wake(held)
                    continue
            if now >= held.deadline_ms:
                self._wake(held)
                continue
            keep.append(held)
        if keep:
            # Requests suspended by a wake-up callback meanwhile are kept too.
            self._table.setdefault(key, [])[:0] = keep

    def _has_match(self, held: HeldPullRequest, newest: int) -> bool:
        if held.subscription.subscribes_all:
            return True
        start = held.pull_from_this_offset
        units = max(MIN_MATCH_SCAN_UNITS, held.request.max_msg_nums)
        end = min(newest, start + units)
        req = held.request
        codes = self.store.tags_codes(req.topic, req.queue_id, start, end)
        return any(held.subscription.matches(code) for _, code in codes)
