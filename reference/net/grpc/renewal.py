"""The front's receipt handle manager: it keeps an auto-renewing consumer's messages invisible while the client
lives, as the RocketMQ 5 proxy's DefaultReceiptHandleManager does (issue 38, docs/grpc.md "Auto-renew").

A push consumer receives with ``auto_renew`` and no invisible time: it gets 60 s, and its listener may run longer.
The proxy tracks every handle such a receive gave out, per (client, group), and every 5 s renews each one due
within 10 s by a ChangeInvisibleDuration of its own: 1 min, then 3, 5, 10, 30 min, then 1 h each time
(RenewStrategyPolicy), for at most 3 h after the receive; past that it stops renewing and gives the message back
after the group's retry delay. The client keeps the handle it received; when it acks, changes or dead-letters it,
the front forgets the handle and acts on the newest renewed one instead (a change voids the handle it replaced).

When the client is gone (it unregistered, sent NotifyClientTermination, or the core's consumer registry expired it
for want of heartbeats) the handles it held are given back at once: visible again after 1 s
(invisibleTimeMillisWhenClear), not after the rest of their invisible time. So a killed push consumer's messages
come back when the broker considers it gone (``channel_expired_timeout_ms``, 120 s by default: 115-146 s were seen
on the real proxy), not after the 60 s it was told.

Time is the broker host's clock (real, or simulated in the tests), as for the long polling in ``receive.py``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from reference.broker.broker import Broker
from reference.broker.pop.protocol import PoppedMessage
from reference.broker.pop.receipt import INVALID_RECEIPT_HANDLE, ReceiptHandle
from reference.clock import Clock
from reference.net.grpc.clients import channel_key
from reference.net.grpc.telemetry import CONSUMER_BACKOFF_MS
from reference.periodic import PeriodicTask
from reference.rules.errors import InvalidRequest

#: ProxyConfig.renewSchedulePeriodMillis: how often the handles are scanned.
RENEW_SCHEDULE_PERIOD_MS = 5_000
#: ProxyConfig.renewAheadTimeMillis: a handle visible again within this is renewed.
RENEW_AHEAD_MS = 10_000
#: ProxyConfig.renewMaxTimeMillis: how long after its receive a message is renewed at most.
RENEW_MAX_MS = 3 * 3_600_000
#: ProxyConfig.maxRenewRetryTimes: failed renewals of one handle before it is dropped.
MAX_RENEW_RETRY_TIMES = 3
#: ProxyConfig.invisibleTimeMillisWhenClear: how soon a gone client's messages are visible again.
INVISIBLE_WHEN_CLEAR_MS = 1_000
#: RenewStrategyPolicy: the invisible time of the n-th renewal (the last repeats).
RENEW_STEPS_MS = (60_000, 180_000, 300_000, 600_000, 1_800_000, 3_600_000)
#: CustomizedRetryPolicy.nextDelayDuration: the group's retry delay is step ``reconsume_times + 2`` of its table.
RETRY_POLICY_OFFSET = 2


@dataclass
class TrackedHandle:
    """One message an auto-renew receive gave a client (MessageReceiptHandle)."""

    topic: str
    #: The newest handle: the received one until the first renewal (the client's handle is the tracking key).
    current: str
    consume_ms: int
    reconsume_times: int
    renew_times: int = 0
    retry_times: int = 0

    @property
    def visible_at_ms(self) -> int:
        return ReceiptHandle.parse(self.current).revive_time


def retry_delay_ms(reconsume_times: int) -> int:
    """The group's retry delay for a message received ``reconsume_times`` times before (the default policy)."""
    return CONSUMER_BACKOFF_MS[min(max(reconsume_times, 0) + RETRY_POLICY_OFFSET, len(CONSUMER_BACKOFF_MS) - 1)]


class ReceiptHandleManager:
    """Every tracked handle by (client id, group), renewed on the clock until acked or the client is gone."""

    def __init__(self, clock: Clock, broker: Callable[[], Broker]) -> None:
        self._clock = clock
        self._broker = broker
        self.groups: dict[tuple[str, str], dict[str, TrackedHandle]] = {}
        #: Renewals done so far (the figure the tests read).
        self.renewals = 0
        self._task = PeriodicTask(clock, 0, RENEW_SCHEDULE_PERIOD_MS, self.scan)

    def start(self) -> None:
        self._task.start()

    def stop(self) -> None:
        self._task.cancel()

    def track(self, client_id: str, group: str, messages: Iterable[PoppedMessage]) -> None:
        """An auto-renew receive's messages (ReceiveMessageActivity: only when ``auto_renew`` is set)."""
        now = self._clock.now_ms()
        handles = self.groups.setdefault((client_id, group), {})
        for m in messages:
            handles[m.handle] = TrackedHandle(m.topic, m.handle, now, m.reconsume_times)

    def forget(self, client_id: str, group: str, handle: str) -> str:
        """The client acks, changes or dead-letters ``handle``: stop renewing it; the handle to act on is the
        newest renewed one (``handle`` itself when it was never tracked)."""
        tracked = self.groups.get((client_id, group), {}).pop(handle, None)
        return tracked.current if tracked is not None else handle

    def clear(self, client_id: str, group: str) -> None:
        """The client left the group: every message it held is visible again after 1 s."""
        for tracked in self.groups.pop((client_id, group), {}).values():
            self._change(group, tracked, INVISIBLE_WHEN_CLEAR_MS, client_id)

    def clear_client(self, client_id: str) -> None:
        """NotifyClientTermination or an unregister: the client leaves all its groups."""
        for key in [k for k in self.groups if k[0] == client_id]:
            self.clear(*key)

    def check_group(self, group: str) -> None:
        """The group's members changed: a tracked client the registry no longer lists is gone (the proxy clears it
        at the registry's CLIENT_UNREGISTER event; the core tells the members that remain)."""
        for client_id, tracked_group in [k for k in self.groups if k[1] == group]:
            if self._offline(client_id, tracked_group):
                self.clear(client_id, tracked_group)

    def _offline(self, client_id: str, group: str) -> bool:
        """clientIsOffline: the registry no longer lists the client in the group."""
        info = self._broker().consumer_manager.get_consumer_group_info(group)
        return info is None or channel_key(client_id) not in info.channel_info_table

    def scan(self) -> None:
        """scheduleRenewTask: a gone client's handles are given back; the others are renewed when due."""
        for (client_id, group), handles in list(self.groups.items()):
            if self._offline(client_id, group):
                self.clear(client_id, group)
                continue
            now = self._clock.now_ms()
            for key, tracked in list(handles.items()):
                if tracked.visible_at_ms - now <= RENEW_AHEAD_MS and not self._renew(client_id, group, tracked, now):
                    handles.pop(key, None)

    def _renew(self, client_id: str, group: str, tracked: TrackedHandle, now: int) -> bool:
        """startRenewMessage; False when the handle is no longer tracked."""
        if tracked.retry_times >= MAX_RENEW_RETRY_TIMES:
            return False
        if now - tracked.consume_ms >= RENEW_MAX_MS:  # held too long: given back after the group's retry delay
            self._change(group, tracked, retry_delay_ms(tracked.reconsume_times), client_id)
            return False
        step = RENEW_STEPS_MS[min(tracked.renew_times, len(RENEW_STEPS_MS) - 1)]
        try:
            result = self._broker().change_invisible_time(group, tracked.topic, tracked.current, step, client_id)
        except InvalidRequest as exc:  # an invalid handle (acked, changed, revived meanwhile) is not retried
            if exc.code == INVALID_RECEIPT_HANDLE:
                return False
            tracked.retry_times += 1
            return True
        tracked.current = result.handle
        tracked.retry_times = 0
        tracked.renew_times += 1
        self.renewals += 1
        return True

    def _change(self, group: str, tracked: TrackedHandle, invisible_ms: int, client_id: str) -> None:
        with contextlib.suppress(InvalidRequest):  # acked or revived meanwhile: nothing to give back
            self._broker().change_invisible_time(group, tracked.topic, tracked.current, invisible_ms, client_id)
