"""The commit log: every message of every topic, appended in arrival order to segment files.

A message's commit-log offset is its byte position in this log; consume-queue units point at it.
The log grows at its end only; retention removes whole segments from its front, which raises
:attr:`CommitLog.min_offset` (seed 002 §2). Each segment remembers the store time of its newest
record, the age retention judges it by.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from reference.store.config import MessageStoreConfig
from reference.store.mapped_file import MappedFileQueue
from reference.store.message import StoredMessage, store_host_bytes
from reference.store.record import (
    END_MARKER_BYTES,
    MESSAGE_MAGIC,
    RecordHeader,
    check_record,
    header_topic,
    read_record,
    store_timestamp_at,
    write_blank,
    write_record,
)

#: The page the ASYNC flush counts dirty data in (RocketMQ's MappedFile.OS_PAGE_SIZE).
OS_PAGE_BYTES = 4096
#: Called by recovery for each intact record: (commit-log offset, header, topic).
RecordVisitor = Callable[[int, RecordHeader, str], None]


class CommitLog:
    def __init__(self, directory: Path, config: MessageStoreConfig) -> None:
        self._sync = config.flush_disk_type == "SYNC"
        self.files = MappedFileQueue(directory, config.commit_log_segment_bytes, sync_dir=self._sync)
        self.segment_bytes = config.commit_log_segment_bytes
        self.store_host = store_host_bytes(config.store_host)
        #: segment start -> store timestamp of its newest record (segments holding records only).
        self._newest_timestamp: dict[int, int] = {}
        #: The commit-log offset up to which every byte is msync'ed (RocketMQ's flushedWhere): with SYNC flush
        #: the end of the last append, with ASYNC where :meth:`flush` last got to.
        self.flushed_where = 0

    # -- recovery ------------------------------------------------------------------------------
    def recover(self, visit: RecordVisitor) -> None:
        """Map the segments, keep every intact record (each handed to ``visit``), and cut the log at
        the first record that is not: zero the rest of that segment, delete any later segment."""
        self.files.load()
        segments = self.files.segments
        for index, seg in enumerate(segments):
            pos = 0
            newest = None
            while True:
                length, header = check_record(seg.mm, pos, seg.size, seg.start + pos)
                if length == 0 or header is None:
                    break
                visit(seg.start + pos, header, header_topic(seg.mm, pos, header))
                newest = header.store_timestamp
                pos += length
            if newest is not None:
                self._newest_timestamp[seg.start] = newest
            if length and header is None:  # end-of-segment marker: this segment is complete
                seg.wrote = seg.size
                continue
            seg.zero_from(pos)
            seg.wrote = pos
            while len(segments) > index + 1:
                self.files.delete_last()
            break
        self.flushed_where = self.files.max_offset  # what recovery read is on disk

    # -- append / read -------------------------------------------------------------------------
    def fits(self, total: int) -> bool:
        """Whether a record of ``total`` bytes fits an empty segment (with room for the end marker)."""
        return total + END_MARKER_BYTES <= self.segment_bytes

    def append(
        self,
        total: int,
        queue_id: int,
        queue_offset: int,
        store_timestamp: int,
        born_timestamp: int,
        reconsume_times: int,
        tags_code: int,
        topic: bytes,
        tags: bytes,
        keys: bytes,
        props: bytes,
        body: bytes,
    ) -> int:
        """Append one record of ``total`` bytes (it must :meth:`fit`); returns its commit-log offset."""
        seg = self.files.writable()
        pos = seg.wrote
        if pos + total + END_MARKER_BYTES > seg.size:
            write_blank(seg.mm, pos, seg.size - pos)
            seg.wrote = seg.size
            if self._sync:
                seg.flush(pos, seg.size)
            seg = self.files.writable()
            pos = 0
        offset = seg.start + pos
        write_record(
            seg.mm, pos, total, offset, queue_id, queue_offset, store_timestamp, born_timestamp,
            reconsume_times, tags_code, self.store_host, topic, tags, keys, props, body,
        )
        seg.wrote = pos + total
        self._newest_timestamp[seg.start] = store_timestamp
        if self._sync:
            seg.flush(pos, pos + total)
            self.flushed_where = offset + total
        return offset

    def flush(self, least_bytes: int = 0) -> int:
        """msync what was appended since the last flush, if at least ``least_bytes`` (0: anything); the new
        :attr:`flushed_where`. RocketMQ's MappedFileQueue.flush(leastPages)."""
        end = self.files.max_offset
        begin = max(self.flushed_where, self.files.min_offset)
        if end <= begin or end - begin < least_bytes:
            return self.flushed_where
        for seg in self.files.segments:
            if seg.end > begin and seg.start < end:
                seg.flush(max(begin - seg.start, 0), min(end, seg.end) - seg.start)
        self.flushed_where = end
        return end

    def read(self, offset: int, size: int) -> StoredMessage | None:
        """The message at ``offset`` (``size`` bytes), or None if its segment is gone or not written."""
        files = self.files
        segments = files.segments
        if not segments or offset < segments[0].start or offset + size > segments[-1].end:
            return None
        seg = segments[offset // self.segment_bytes - segments[0].start // self.segment_bytes]
        return read_record(seg.mm, offset - seg.start)

    def look_message_by_offset(self, offset: int) -> StoredMessage | None:
        """The intact message record that starts exactly at ``offset``, or None (RocketMQ's
        lookMessageByOffset). Unlike :meth:`read`, the size is not known, so the record is checked
        first: callers pass offsets a client sent (CONSUMER_SEND_MSG_BACK names a message only so)."""
        if offset < 0:
            return None
        seg = self.files.find(offset)
        if seg is None:
            return None
        pos = offset - seg.start
        length, header = check_record(seg.mm, pos, seg.size, offset)
        if header is None or length == 0 or header.magic != MESSAGE_MAGIC:
            return None
        return read_record(seg.mm, pos)

    def store_timestamp(self, offset: int) -> int:
        """Store time of the record at ``offset`` (which must be present)."""
        seg = self.files.find(offset)
        assert seg is not None, f"no commit-log segment holds offset {offset}"
        return store_timestamp_at(seg.mm, offset - seg.start)

    # -- bounds and retention ------------------------------------------------------------------
    @property
    def min_offset(self) -> int:
        return self.files.min_offset

    @property
    def max_offset(self) -> int:
        return self.files.max_offset

    def roll_next_file(self, offset: int) -> int:
        """Start of the segment after the one holding ``offset`` (RocketMQ's rollNextFile)."""
        return offset + self.segment_bytes - offset % self.segment_bytes

    def delete_expired(self, expired: Callable[[int], bool], limit: int) -> int:
        """Delete segments from the front while ``expired(newest store time)`` holds, never the one
        being written and at most ``limit``; returns how many were deleted."""
        deleted = 0
        while len(self.files.segments) > 1 and deleted < limit:
            start = self.files.segments[0].start
            newest = self._newest_timestamp.get(start)
            if newest is None or not expired(newest):
                break
            self.files.delete_first()
            del self._newest_timestamp[start]
            deleted += 1
        return deleted

    def close(self) -> None:
        for seg in self.files.segments:
            seg.mm.flush()
        self.files.close()
