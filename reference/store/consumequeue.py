"""ConsumeQueue: the index of one (topic, queueId), 20-byte units in logical-offset order.

Unit *n* (the message at queue offset *n*) sits at byte ``n * 20`` of the queue's byte space and
holds, big-endian, the commit-log offset (int64), the record size (int32) and the tags hash code
(int64) (seed 002 §1: "逻辑队列中一个数据的大小是20"). A pull reads units to find which
commit-log records to return and filters on the hash code without touching the commit log.

Offsets here are queue offsets (unit numbers) unless a name says bytes.

* ``max_offset`` is the next offset to be written (0 for an empty queue).
* ``min_offset`` is RocketMQ's minLogicOffset: the first offset still worth reading. It moves only
  when :meth:`correct_min_offset` is called, *not* when segments are deleted, so between the two a
  pull can land in a deleted segment (OFFSET_FOUND_NULL), exactly the window RocketMQ has.

Units are written in commit-log order, so within a queue their commit-log offsets increase; the
searches below rely on it.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from mmap import mmap
from pathlib import Path

from reference.store.mapped_file import MappedFile, MappedFileQueue

#: Bytes per unit (RocketMQ's CQ_STORE_UNIT_SIZE). Part of the on-disk format, so not configurable.
CQ_STORE_UNIT_SIZE = 20
UNIT = struct.Struct(">qiq")
_NEVER_WRITTEN = bytes(CQ_STORE_UNIT_SIZE)
#: Consume-queue files grow: disk is allocated this many bytes (204 units) at a time ahead of the writes, not
#: the whole 6,000,000-byte segment when a queue gets its first message (MappedFile.ensure_allocated).
CQ_ALLOCATE_STEP = 4096
#: Placeholder for offsets before the first unit of a queue rebuilt from a trimmed commit log: it
#: points nowhere (commit-log offset -1, below any real one), so it reads as removed and the min
#: offset correction skips it; it is not all zeros, so recovery counts it as written.
FILLER_UNIT = UNIT.pack(-1, 0, 0)


class ConsumeQueueGap(RuntimeError):
    """A unit was offered out of order: the commit log and this queue disagree (a damaged store)."""


class ConsumeQueue:
    def __init__(self, topic: str, queue_id: int, directory: Path, units_per_segment: int) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.units_per_segment = units_per_segment
        self.files = MappedFileQueue(directory, units_per_segment * CQ_STORE_UNIT_SIZE, allocate_step=CQ_ALLOCATE_STEP)
        self.min_offset = 0

    def load(self) -> None:
        """Map existing segments; the last one is written up to its first never-written unit."""
        self.files.load()
        if self.files.segments:
            last = self.files.segments[-1]
            lo, hi = 0, last.size // CQ_STORE_UNIT_SIZE
            while lo < hi:  # written units form a prefix: find the first all-zero unit
                mid = (lo + hi) // 2
                pos = mid * CQ_STORE_UNIT_SIZE
                if last.mm[pos:pos + CQ_STORE_UNIT_SIZE] == _NEVER_WRITTEN:
                    hi = mid
                else:
                    lo = mid + 1
            last.wrote = lo * CQ_STORE_UNIT_SIZE
        self.min_offset = self.files.min_offset // CQ_STORE_UNIT_SIZE

    @property
    def max_offset(self) -> int:
        return self.files.max_offset // CQ_STORE_UNIT_SIZE

    # -- write ---------------------------------------------------------------------------------
    def put(self, offset: int, commit_log_offset: int, size: int, tags_code: int) -> None:
        """Write the unit for queue offset ``offset``, which must be :attr:`max_offset` (an empty
        queue may start anywhere: recovery rebuilding a queue whose first messages expired)."""
        seg = self.reserve(offset)
        UNIT.pack_into(seg.mm, seg.wrote, commit_log_offset, size, tags_code)
        seg.wrote += CQ_STORE_UNIT_SIZE

    def reserve(self, offset: int) -> MappedFile:
        """The segment the unit for ``offset`` goes to, created if need be. The store asks before it writes the
        commit log, so a file system with no room for a new segment refuses the message before any of it is
        stored (STORE-23)."""
        segments = self.files.segments
        if segments:
            seg = segments[-1]
            if seg.wrote < seg.size and seg.start + seg.wrote == offset * CQ_STORE_UNIT_SIZE:
                seg.ensure_allocated(seg.wrote + CQ_STORE_UNIT_SIZE)
                return seg
            if offset != self.max_offset:
                raise ConsumeQueueGap(
                    f"consume queue {self.topic}/{self.queue_id}: unit for offset {offset} offered "
                    f"but the next offset is {self.max_offset}"
                )
            seg = self.files.writable()
            seg.ensure_allocated(seg.wrote + CQ_STORE_UNIT_SIZE)
            return seg
        byte = offset * CQ_STORE_UNIT_SIZE
        seg = self.files.create(byte - byte % self.files.segment_bytes)
        try:
            seg.ensure_allocated(byte - seg.start + CQ_STORE_UNIT_SIZE)
        except OSError:
            self.files.delete_last()  # no room: the queue stays as it was, without an empty segment
            raise
        for pos in range(0, byte - seg.start, CQ_STORE_UNIT_SIZE):
            seg.mm[pos:pos + CQ_STORE_UNIT_SIZE] = FILLER_UNIT
        seg.wrote = byte - seg.start
        self.min_offset = offset
        return seg

    # -- read ----------------------------------------------------------------------------------
    def segment_of(self, offset: int) -> MappedFile | None:
        """The segment holding queue offset ``offset`` (RocketMQ's getIndexBuffer), None if deleted."""
        return self.files.find(offset * CQ_STORE_UNIT_SIZE)

    def roll_next_file(self, offset: int) -> int:
        """First queue offset of the segment after the one holding ``offset``."""
        return offset + self.units_per_segment - offset % self.units_per_segment

    def unit(self, offset: int) -> tuple[int, int, int] | None:
        """(commit-log offset, size, tags code) of the unit at ``offset``, None if absent."""
        if not self.min_offset <= offset < self.max_offset:
            return None
        seg = self.segment_of(offset)
        if seg is None:
            return None
        return UNIT.unpack_from(seg.mm, offset * CQ_STORE_UNIT_SIZE - seg.start)

    def units(self, start: int, end: int) -> Iterator[tuple[int, tuple[int, int, int]]]:
        """(offset, unit) for the units in ``[start, end)`` still present and not below min."""
        offset = max(start, self.min_offset, self.files.min_offset // CQ_STORE_UNIT_SIZE)
        end = min(end, self.max_offset)
        while offset < end:
            seg = self.segment_of(offset)
            assert seg is not None
            seg_end = min(end, seg.end // CQ_STORE_UNIT_SIZE)
            first = offset * CQ_STORE_UNIT_SIZE - seg.start
            data = seg.mm[first:first + (seg_end - offset) * CQ_STORE_UNIT_SIZE]
            for unit in UNIT.iter_unpack(data):
                yield offset, unit
                offset += 1

    def first_offset_at_or_after(self, commit_log_offset: int) -> int:
        """First queue offset at or above :attr:`min_offset` whose message starts at or after
        ``commit_log_offset`` (:attr:`max_offset` if none); binary search, units being in
        commit-log order."""
        lo = max(self.min_offset, self.files.min_offset // CQ_STORE_UNIT_SIZE)
        hi = self.max_offset
        while lo < hi:
            mid = (lo + hi) // 2
            seg = self.segment_of(mid)
            assert seg is not None
            if _phy(seg.mm, mid * CQ_STORE_UNIT_SIZE - seg.start) < commit_log_offset:
                lo = mid + 1
            else:
                hi = mid
        return lo

    # -- recovery and retention ----------------------------------------------------------------
    def truncate_past(self, commit_log_end: int) -> None:
        """Drop units whose record does not end by ``commit_log_end`` (they index a torn tail)."""
        files = self.files
        while files.segments:
            seg = files.segments[-1]
            if seg.wrote == 0 and len(files.segments) > 1:
                files.delete_last()
                continue
            lo, hi = 0, seg.wrote // CQ_STORE_UNIT_SIZE
            while lo < hi:
                mid = (lo + hi) // 2
                phy, size, _ = UNIT.unpack_from(seg.mm, mid * CQ_STORE_UNIT_SIZE)
                if phy + size > commit_log_end:
                    hi = mid
                else:
                    lo = mid + 1
            if lo * CQ_STORE_UNIT_SIZE == seg.wrote:
                return
            if lo == 0 and len(files.segments) > 1:
                files.delete_last()
                continue
            seg.zero_from(lo * CQ_STORE_UNIT_SIZE)
            return

    def delete_expired_segments(self, commit_log_min: int) -> int:
        """Delete segments from the front whose last unit points below ``commit_log_min`` (their
        messages are all gone), never the one being written; returns how many."""
        deleted = 0
        files = self.files
        while len(files.segments) > 1:
            seg = files.segments[0]
            if _phy(seg.mm, seg.size - CQ_STORE_UNIT_SIZE) >= commit_log_min:
                break
            files.delete_first()
            deleted += 1
        return deleted

    def correct_min_offset(self, commit_log_min: int, raise_if_emptied: bool = True) -> bool:
        """Raise :attr:`min_offset` to the first unit pointing at or after ``commit_log_min`` (RETAIN-7). When
        none does, every message of the queue is gone: raise it to :attr:`max_offset` if ``raise_if_emptied``
        (RETAIN-9, RocketMQ 5), leave it otherwise (RocketMQ 4.x). Returns whether it rose."""
        new_min = self.first_offset_at_or_after(commit_log_min)
        if new_min == self.max_offset and not raise_if_emptied:
            return False
        if new_min > self.min_offset:
            self.min_offset = new_min
            return True
        return False

    def close(self) -> None:
        for seg in self.files.segments:
            seg.mm.flush()
        self.files.close()


def _phy(mm: mmap, pos: int) -> int:
    return UNIT.unpack_from(mm, pos)[0]
