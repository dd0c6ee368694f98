"""ConsumerOrderInfoManager: ordered POP, one batch in flight per queue and group (seed 004 §4.2.1-§4.2.2).

Theory of operation
-------------------
An ordered pop (``order``) leaves no checkpoint and is never revived: the broker instead remembers, per
(topic, group, queue), the batch it handed out (:class:`OrderInfo`: its pop time, invisible time and
offsets) and commits the queue's consume offset at the batch's *start* (seed 004 lines 592-598). So:

* while a batch is unacknowledged and its invisibility lasts, the queue is **blocked**: a further
  ordered pop of that group skips it (``checkBlock``, lines 546-549), so no later message of the
  queue is delivered out of order;
* once the invisibility ends unacknowledged, the next pop reads the *same* messages again from the
  committed start, and each one's **consume count** grows by one (``update`` returns it, lines 594-599;
  the answer carries it as orderCountInfo, lines 496-498);
* an ack (revive queue :data:`POP_ORDER_REVIVE_QUEUE`, lines 714-716) marks its message done; when the
  whole batch is done the offset after it is committed and the queue is free (upstream
  ``commitAndNext``);
* a change of invisible time of one message of the batch moves that message's next visible time
  (upstream ``updateNextVisibleTime``): the queue stays blocked while any message not done is invisible.

The seed gives the calls, not their bodies; the count arithmetic (an offset handed out again counts
one more) and commitAndNext are upstream ConsumerOrderInfoManager's (rocketmq-all-5.3.3).
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: KeyBuilder.POP_ORDER_REVIVE_QUEUE: the revive queue id an ordered pop's handles carry (seed 004 line 413).
POP_ORDER_REVIVE_QUEUE = 999
#: commitAndNext's answers that commit nothing: the offset is no message of the batch, the pop time is stale.
NOT_IN_BATCH = -1
STALE_POP_TIME = -2


@dataclass
class OrderInfo:
    """The batch in flight on one queue: when it was popped, for how long, which offsets, which are done."""

    pop_time: int
    invisible_time: int
    offsets: tuple[int, ...]
    #: How often each offset was handed out before this batch (0 the first time).
    counts: dict[int, int]
    done: set[int] = field(default_factory=set)
    #: Offsets whose invisibility a change of invisible time moved: offset -> when it is visible again.
    next_visible: dict[int, int] = field(default_factory=dict)

    def blocks(self, now: int) -> bool:
        """A batch not acknowledged in full blocks its queue while a message not done is invisible (each until
        its own next visible time when it was changed, else the batch's; upstream OrderInfo.needBlock)."""
        return any(now < self.next_visible.get(o, self.pop_time + self.invisible_time)
                   for o in self.offsets if o not in self.done)

    def next_offset(self) -> int:
        """The offset to commit: past the batch when all is done, else its first message not done."""
        for offset in self.offsets:
            if offset not in self.done:
                return offset
        return self.offsets[-1] + 1


class ConsumerOrderInfoManager:
    def __init__(self) -> None:
        self._table: dict[tuple[str, str, int], OrderInfo] = {}

    def check_block(self, topic: str, group: str, queue_id: int, now: int) -> bool:
        info = self._table.get((topic, group, queue_id))
        return info is not None and info.blocks(now)

    def update(
        self, topic: str, group: str, queue_id: int, pop_time: int, invisible_time: int, offsets: list[int]
    ) -> dict[int, int]:
        """Record a newly popped batch; the consume count of each of its offsets (seed 004 line 594)."""
        key = (topic, group, queue_id)
        previous = self._table.get(key)
        counts = {
            o: (previous.counts.get(o, 0) + 1 if previous is not None and o in previous.offsets else 0)
            for o in offsets
        }
        self._table[key] = OrderInfo(pop_time, invisible_time, tuple(offsets), counts)
        return counts

    def commit_and_next(self, topic: str, group: str, queue_id: int, offset: int, pop_time: int) -> int:
        """Mark ``offset`` of the batch popped at ``pop_time`` done: the offset to commit, or
        :data:`NOT_IN_BATCH` / :data:`STALE_POP_TIME` (nothing changed)."""
        info = self._table.get((topic, group, queue_id))
        if info is None or offset not in info.offsets:
            return NOT_IN_BATCH
        if info.pop_time != pop_time:
            return STALE_POP_TIME
        info.done.add(offset)
        return info.next_offset()

    def update_next_visible(
        self, topic: str, group: str, queue_id: int, offset: int, pop_time: int, next_visible: int
    ) -> int:
        """Make ``offset`` of the batch popped at ``pop_time`` invisible until ``next_visible`` (upstream
        updateNextVisibleTime): 0, or :data:`NOT_IN_BATCH` / :data:`STALE_POP_TIME` (nothing changed)."""
        info = self._table.get((topic, group, queue_id))
        if info is None or offset not in info.offsets:
            return NOT_IN_BATCH
        if info.pop_time != pop_time:
            return STALE_POP_TIME
        info.next_visible[offset] = next_visible
        return 0

    def is_done(self, topic: str, group: str, queue_id: int, offset: int, pop_time: int) -> bool:
        info = self._table.get((topic, group, queue_id))
        return info is not None and info.pop_time == pop_time and offset in info.done
