"""PopBufferMergeService: checkpoints matched with acks in memory, and the pop offset (seed 004 §3.4.1).

Theory of operation
-------------------
Most messages are acknowledged quickly, so a checkpoint first waits in memory with a bitmap of its
acknowledged messages; an ack that finds its checkpoint here just sets a bit (``add_ack``). A
checkpoint leaves memory in one of two ways:

* **done**: every bit is set; it is dropped, nothing is ever written for it;
* **stored**: it is written to the revive log together with the bits gathered so far, because it
  stayed ``pop_ck_stay_buffer_time_ms`` (10 s), or its revive time is closer than
  ``pop_ck_stay_buffer_timeout_ms`` (3 s), or the broker is shutting down. Acks that come later do
  not find it here and are written to the revive log, where the revive service matches them.

A checkpoint whose revive time is already closer than the stay timeout plus 1.5 s when it is created
is stored at once (§4.4.1, ``addCk`` refuses it).

RocketMQ scans the buffer every 5 ms; here the service computes the instant each buffered
checkpoint must leave and acts then, which is what a 5 ms scan approximates.

**The pop offset.** Every pop of a queue appends an entry to that queue's offset list, in pop order
(``putOffsetQueue``). The queue's committed consume offset advances to an entry's next begin offset
once that entry and every entry before it are *done or stored* (``scanCommitOffset``): a stored
checkpoint's unacked messages will be revived from the log, so the queue itself need not be read
again. The next pop of the queue starts at the newest entry's next begin offset (``getLatestOffset``),
or at the committed offset when the list is empty.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from reference.broker.pop.checkpoint import PopCheckPoint
from reference.broker.pop.config import CK_BUFFER_ADMISSION_SLACK_MS, PopConfig
from reference.broker.pop.keys import CheckpointKey, lock_key
from reference.broker.pop.revive_log import ReviveLog
from reference.clock import Clock, TimerHandle

#: Called when a queue's consume offset is committed: (group, topic, queue_id, offset).
OffsetCommitter = Callable[[str, str, int, int], None]
#: Called after a checkpoint was written to the revive log (the revive service reads it then).
StoredListener = Callable[[PopCheckPoint], None]


@dataclass(eq=False)
class CheckpointWrapper:
    """PopCheckPointWrapper: a checkpoint (None for an offset-only entry) and its state."""

    topic: str
    group: str
    queue_id: int
    next_begin_offset: int
    ck: PopCheckPoint | None
    bits: int = 0
    stored: bool = False

    @property
    def done(self) -> bool:
        """Nothing left for memory to do: every message acked, or an offset-only entry."""
        return self.ck is None or self.bits == self.ck.all_acked

    def leave_at(self, config: PopConfig) -> int:
        """The first instant at which the scan would move it to the revive log."""
        assert self.ck is not None
        timeout = self.ck.revive_time - config.pop_ck_stay_buffer_timeout_ms + 1
        stay = self.ck.pop_time + config.pop_ck_stay_buffer_time_ms + 1
        return min(timeout, stay)


class PopBufferMergeService:
    def __init__(
        self,
        config: PopConfig,
        clock: Clock,
        revive_log: ReviveLog,
        commit: OffsetCommitter,
        on_stored: StoredListener,
    ) -> None:
        self.config = config
        self.clock = clock
        self.revive_log = revive_log
        self._commit = commit
        self._on_stored = on_stored
        self.buffer: dict[Hashable, CheckpointWrapper] = {}
        self._offset_queues: dict[str, deque[CheckpointWrapper]] = {}
        self.serving = True
        self._timer: TimerHandle | None = None
        self._timer_due: int | None = None

    # -- keys (one method, so the key rule has one owner) ---------------------------------------
    def merge_key(self, key: CheckpointKey) -> Hashable:
        """The buffer's map key for a checkpoint key (the whole key: see :mod:`.keys`)."""
        return key

    def find(self, key: CheckpointKey) -> CheckpointWrapper | None:
        """The buffered checkpoint with this key, if it is still in memory."""
        return self.buffer.get(self.merge_key(key))

    # -- adding --------------------------------------------------------------------------------
    def add_checkpoint(self, ck: PopCheckPoint, next_begin_offset: int, track_offset: bool = True) -> bool:
        """Keep ``ck`` in memory if it may stay (True), else write it to the revive log now (False).

        ``track_offset`` puts it on its queue's offset list (pops do; a change of invisible time,
        whose message is already behind the offset, does not).
        """
        wrapper = CheckpointWrapper(ck.topic, ck.group, ck.queue_id, next_begin_offset, ck)
        if track_offset:
            self._offset_queue(ck.topic, ck.group, ck.queue_id).append(wrapper)
        now = self.clock.now_ms()
        buffered = (
            self.config.enable_pop_buffer_merge
            and self.serving
            and ck.revive_time - now >= self.config.pop_ck_stay_buffer_timeout_ms + CK_BUFFER_ADMISSION_SLACK_MS
            and len(self.buffer) < self.config.pop_ck_max_buffer_size
        )
        if buffered:
            self.buffer[self.merge_key(ck.key)] = wrapper
            self._schedule(wrapper.leave_at(self.config))
        else:
            self._store(wrapper)
            self.scan_commit_offset()
        return buffered

    def add_offset_only(self, topic: str, group: str, queue_id: int, next_begin_offset: int) -> None:
        """addCkMock: move the pop offset past units that held no message for the group (filtered
        out, or removed), in pop order like a checkpoint."""
        entry = CheckpointWrapper(topic, group, queue_id, next_begin_offset, None)
        self._offset_queue(topic, group, queue_id).append(entry)
        self.scan_commit_offset()

    def add_ack(self, key: CheckpointKey, index: int) -> bool:
        """Mark message ``index`` of the buffered checkpoint ``key`` acknowledged; False when the
        checkpoint is not in memory (the ack must then go to the revive log)."""
        merge_key = self.merge_key(key)
        wrapper = self.buffer.get(merge_key)
        if wrapper is None:
            return False
        wrapper.bits |= 1 << index
        if wrapper.done:
            del self.buffer[merge_key]
            self.scan_commit_offset()
        return True

    # -- offsets -------------------------------------------------------------------------------
    def _offset_queue(self, topic: str, group: str, queue_id: int) -> deque[CheckpointWrapper]:
        return self._offset_queues.setdefault(lock_key(topic, group, queue_id), deque())

    def latest_offset(self, topic: str, group: str, queue_id: int) -> int:
        """getLatestOffset: the newest pop's next begin offset for the queue, or -1 if none pending."""
        queue = self._offset_queues.get(lock_key(topic, group, queue_id))
        return queue[-1].next_begin_offset if queue else -1

    def reset_offset_queue(self, topic: str, group: str, queue_id: int) -> None:
        """Forget the queue's pending pop offsets (after the broker corrected a wrong offset): the
        corrected offset rules; the checkpoints themselves stay, for acks and revive."""
        self._offset_queues.pop(lock_key(topic, group, queue_id), None)

    def scan_commit_offset(self) -> None:
        """Commit, per queue, the next begin offset of the leading entries that are done or stored."""
        for key, queue in list(self._offset_queues.items()):
            committed: CheckpointWrapper | None = None
            while queue and (queue[0].done or queue[0].stored):
                committed = queue.popleft()
            if committed is not None:
                self._commit(committed.group, committed.topic, committed.queue_id, committed.next_begin_offset)
            if not queue:
                del self._offset_queues[key]

    # -- leaving memory ------------------------------------------------------------------------
    def _store(self, wrapper: CheckpointWrapper) -> None:
        assert wrapper.ck is not None
        self.revive_log.append_checkpoint(wrapper.ck, wrapper.bits)
        wrapper.stored = True
        self._on_stored(wrapper.ck)

    def scan(self) -> None:
        """Move every checkpoint whose stay is over (or all, when not serving) to the revive log."""
        self._timer, self._timer_due = None, None
        now = self.clock.now_ms()
        for key, wrapper in list(self.buffer.items()):
            if not self.serving or now >= wrapper.leave_at(self.config):
                del self.buffer[key]
                self._store(wrapper)
        self.scan_commit_offset()
        if self.buffer:
            self._schedule(min(w.leave_at(self.config) for w in self.buffer.values()))

    def _schedule(self, due: int) -> None:
        if self._timer_due is not None and self._timer_due <= due:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer_due = due
        self._timer = self.clock.call_later(max(0, due - self.clock.now_ms()), self.scan)

    def shutdown(self) -> None:
        """Stop serving: every buffered checkpoint goes to the revive log and offsets are committed,
        so a restarted broker loses nothing that was popped (RocketMQ's scan with serving false)."""
        self.serving = False
        if self._timer is not None:
            self._timer.cancel()
        self.scan()
