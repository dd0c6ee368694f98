"""ProcessQueue: a consumer's cache of one queue's pulled, not yet finished messages (seed 000, seed 001 §4-5).

Theory of operation
-------------------
Pulled messages enter in offset order (a pull returns ascending offsets) and leave in any order (the
concurrent consume service finishes them as its threads do). The queue answers three questions:

* **how much is cached** (``msg_count``, ``msg_size``): the pull loop's flow control;
* **what may be committed**: :meth:`remove_message` returns the smallest offset still cached, or
  the offset after the last cached message when nothing is left (RocketMQ's
  ``removeMessage``). Committing that, and never more, is what keeps a crash from skipping a message
  that is still being consumed;
* **is it still ours** (``dropped``): set by rebalance; a dropped queue is neither pulled nor are its
  consumption results committed.

Offsets are kept in a dict (membership, removal) plus a FIFO of insertion order whose head is
skipped lazily, so the smallest cached offset is amortised O(1) instead of a sorted map's O(log n).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from reference.store.message import StoredMessage


class ProcessQueue:
    __slots__ = (
        "msg_tree_map", "_order", "msg_count", "msg_size", "queue_offset_max", "dropped",
        "last_pull_timestamp", "last_consume_timestamp", "pull_max_idle_time_ms",
    )

    def __init__(self, now_ms: int, pull_max_idle_time_ms: int) -> None:
        self.msg_tree_map: dict[int, StoredMessage] = {}
        self._order: deque[int] = deque()
        self.msg_count = 0
        #: Bytes of cached bodies (what pullThresholdSizeForQueue limits).
        self.msg_size = 0
        #: Largest offset ever cached (the commit point when the cache is empty).
        self.queue_offset_max = -1
        self.dropped = False
        self.last_pull_timestamp = now_ms
        self.last_consume_timestamp = now_ms
        self.pull_max_idle_time_ms = pull_max_idle_time_ms

    def is_pull_expired(self, now_ms: int) -> bool:
        """Not pulled for longer than pullMaxIdleTime (120 s): its pull loop is presumed lost."""
        return now_ms - self.last_pull_timestamp > self.pull_max_idle_time_ms

    def put_message(self, msgs: Iterable[StoredMessage]) -> bool:
        """Cache ``msgs`` (ascending offsets); True when they should be dispatched to consumption."""
        tree = self.msg_tree_map
        order = self._order
        added = size = 0
        last = self.queue_offset_max
        for msg in msgs:
            offset = msg.queue_offset
            if offset not in tree:
                if order and offset < order[-1]:
                    order = self._order = deque(sorted((*order, offset)))  # out of order: rare, re-sort
                else:
                    order.append(offset)
                tree[offset] = msg
                added += 1
                size += len(msg.body)
            if offset > last:
                last = offset
        self.msg_count += added
        self.msg_size += size
        self.queue_offset_max = last
        return added > 0

    def remove_message(self, msgs: Iterable[StoredMessage]) -> int:
        """Forget finished ``msgs``; the offset that may now be committed, or -1 if nothing was cached."""
        tree = self.msg_tree_map
        if not tree:
            return -1
        for msg in msgs:
            if tree.pop(msg.queue_offset, None) is not None:
                self.msg_count -= 1
                self.msg_size -= len(msg.body)
        first = self.first_offset()
        return self.queue_offset_max + 1 if first is None else first

    def first_offset(self) -> int | None:
        """The smallest cached offset (None when empty)."""
        order, tree = self._order, self.msg_tree_map
        while order and order[0] not in tree:
            order.popleft()
        if order:
            return order[0]
        return None
