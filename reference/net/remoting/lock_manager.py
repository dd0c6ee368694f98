"""Queue locks for orderly consumers (LOCK_BATCH_MQ / UNLOCK_BATCH_MQ, protocols/rocketmq-remoting.md §5.11).

RocketMQ's RebalanceLockManager, which the broker core does not have: an orderly consumer locks a queue
before pulling it, so that two members of a group never consume one queue at the same time during a
rebalance. A lock is granted when the queue is free, already held by the same client (a renewal), or held
by a client that has not renewed it for :data:`REBALANCE_LOCK_MAX_LIVE_TIME_MS`; the client renews every
20 s. Locks are not released when a connection closes: they expire, as in RocketMQ.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from reference.allocation.message_queue import MessageQueue
from reference.clock import Clock

#: RocketMQ's rocketmq.broker.rebalance.lockMaxLiveTime default (60 s).
REBALANCE_LOCK_MAX_LIVE_TIME_MS = 60_000


@dataclass
class LockEntry:
    client_id: str
    last_update_timestamp: int


class RebalanceLockManager:
    def __init__(self, clock: Clock, max_live_time_ms: int = REBALANCE_LOCK_MAX_LIVE_TIME_MS) -> None:
        self._clock = clock
        self._max_live_time_ms = max_live_time_ms
        self._table: dict[str, dict[MessageQueue, LockEntry]] = {}

    def try_lock_batch(self, group: str, queues: Iterable[MessageQueue], client_id: str) -> list[MessageQueue]:
        """Lock what can be locked for ``client_id``; returns the queues it now holds, in request order."""
        now = self._clock.now_ms()
        locks = self._table.setdefault(group, {})
        held = []
        for mq in queues:
            entry = locks.get(mq)
            if entry is None or entry.client_id == client_id or self._expired(entry, now):
                locks[mq] = LockEntry(client_id, now)
                held.append(mq)
        return held

    def unlock_batch(self, group: str, queues: Iterable[MessageQueue], client_id: str) -> None:
        locks = self._table.get(group, {})
        for mq in queues:
            entry = locks.get(mq)
            if entry is not None and entry.client_id == client_id:
                del locks[mq]

    def _expired(self, entry: LockEntry, now: int) -> bool:
        return now - entry.last_update_timestamp > self._max_live_time_ms
