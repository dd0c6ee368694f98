"""QueueLockManager: at most one pop reads a queue for a group at a time (seed 004 §2.3, §4.2.2).

The key is ``{topic}@{group}@{queueId}`` (topic may be the retry topic). A pop that finds the queue
locked does not wait: it skips the queue and only counts its backlog into restNum. The broker core
is single-threaded, so a lock is only ever contended by a pop that runs inside another one (a
callback) or by a transport that serves requests concurrently; the rule is kept so that both stay
correct.
"""

from __future__ import annotations


class QueueLockManager:
    def __init__(self) -> None:
        self._locked: set[str] = set()

    def try_lock(self, key: str) -> bool:
        if key in self._locked:
            return False
        self._locked.add(key)
        return True

    def unlock(self, key: str) -> None:
        self._locked.discard(key)

    def is_locked(self, key: str) -> bool:
        return key in self._locked
