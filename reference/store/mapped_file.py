"""Segment files: fixed-size, preallocated, memory-mapped files named by their start offset.

This is RocketMQ's MappedFile / MappedFileQueue, reduced to what the commit log and the consume
queues share. A queue of segments covers a contiguous range of a logical byte space: segment *k*
starts at a multiple of the segment size and is named by that start as 20 zero-padded digits
(``00000000000067108864``), so the segment holding any offset is found by arithmetic. Only the last
segment is written; earlier ones are full and immutable until retention deletes them from the front.

Why mmap: appends and reads become memory copies into the OS page cache, with no system call per
message, which is what makes the store's throughput goals reachable from Python. Files are
preallocated (posix_fallocate where the filesystem supports it) so that a full disk fails when a
segment is created, not as a SIGBUS in the middle of a write.

A segment may instead grow (``allocate_step``, what the consume queues use): the file has its full length
from the start but is sparse, and blocks are allocated ``allocate_step`` bytes at a time, ahead of the write
position (:meth:`MappedFile.ensure_allocated`), so a full disk still fails before a write (at the step, not as
a SIGBUS) while a queue that holds three messages takes one step of disk, not its whole segment (issue 41: a
6,000,000-byte consume-queue file per queue made 3,000 small messages over 40 topics take 334 MB).

A segment knows how many bytes of it are written (``wrote``); the owner decides that on recovery,
because only the owner knows its record format.

Each mapped segment holds one file descriptor (CPython's mmap keeps a duplicate of the one it was
given; ``trackfd=False`` only arrives in 3.13), so a store with many queues needs a matching
``ulimit -n``.
"""

from __future__ import annotations

import errno
import mmap
import os
from pathlib import Path

#: Digits in a segment file name (RocketMQ's UtilAll.offset2FileName).
NAME_DIGITS = 20
#: posix_fallocate errors that mean the file system cannot preallocate at all (not that it is full).
NO_FALLOCATE_ERRNOS = frozenset({errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS})


class MappedFile:
    """One segment: ``mm`` maps the whole file; bytes ``[0, wrote)`` hold data."""

    __slots__ = ("path", "start", "size", "mm", "wrote", "allocate_step", "allocated")

    def __init__(self, path: Path, start: int, size: int, create: bool, allow_short: bool = False,
                 allocate_step: int = 0) -> None:
        self.path = path
        self.start = start
        self.size = size
        #: 0: the whole file is allocated when it is created; else blocks are allocated this many bytes at a time.
        self.allocate_step = allocate_step
        #: Bytes ``[0, allocated)`` are known to be allocated (a file opened again re-asks from 0: harmless).
        self.allocated = 0 if allocate_step else size
        fd = os.open(path, os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0), 0o644)
        try:
            if create and allocate_step:
                os.ftruncate(fd, size)  # sparse: ensure_allocated allocates ahead of the writes
            elif create:
                try:
                    os.posix_fallocate(fd, 0, size)
                except OSError as exc:
                    if exc.errno not in NO_FALLOCATE_ERRNOS:
                        # No room (ENOSPC): a sparse file would be mapped and then die with SIGBUS on the
                        # first write past the space left. Leave nothing behind and say so.
                        os.close(fd)
                        fd = -1
                        path.unlink(missing_ok=True)
                        raise
                    os.ftruncate(fd, size)  # a file system without fallocate: a sparse file of the right length
            else:
                actual = os.fstat(fd).st_size
                if actual < size and allow_short:
                    # The newest segment of a process killed between creating the file and sizing
                    # it: nothing can have been written (writes go through the mapping made after
                    # sizing), so extend it with zeros, which recovery reads as "no record".
                    os.ftruncate(fd, size)
                elif actual != size:
                    raise ValueError(
                        f"segment {path} has {actual} bytes but the configured segment size is {size}; "
                        "open the store with the configuration it was written with"
                    )
            self.mm = mmap.mmap(fd, size)
        finally:
            if fd >= 0:
                os.close(fd)
        self.wrote = 0

    @property
    def end(self) -> int:
        """Logical offset just after the written data."""
        return self.start + self.wrote

    def flush(self, begin: int, end: int) -> None:
        """msync bytes ``[begin, end)`` of this segment (positions relative to the segment)."""
        aligned = begin - begin % mmap.ALLOCATIONGRANULARITY
        if end > aligned:
            self.mm.flush(aligned, end - aligned)

    def ensure_allocated(self, end: int) -> None:
        """Allocate disk blocks for bytes ``[0, end)`` of a growing segment, a step at a time; OSError (ENOSPC)
        when the file system has no room, before anything is written there."""
        if end <= self.allocated:
            return
        upto = min(self.size, -(-end // self.allocate_step) * self.allocate_step)
        fd = os.open(self.path, os.O_RDWR)
        try:
            os.posix_fallocate(fd, self.allocated, upto - self.allocated)
        except OSError as exc:
            if exc.errno not in NO_FALLOCATE_ERRNOS:
                raise
            upto = self.size  # a file system without fallocate: the sparse file is all there is
        finally:
            os.close(fd)
        self.allocated = upto

    def zero_from(self, pos: int) -> None:
        """Erase ``[pos, size)`` so that stale bytes after a truncation can never be read as data. A growing
        segment is cut at ``pos`` and lengthened again, which leaves a hole (zeros) without allocating it."""
        if pos < self.size and self.allocate_step:
            self.mm.flush()
            os.truncate(self.path, pos)
            os.truncate(self.path, self.size)
            self.allocated = min(self.allocated, pos - pos % self.allocate_step)
        elif pos < self.size:
            self.mm[pos:] = bytes(self.size - pos)
        self.wrote = min(self.wrote, pos)

    def close(self) -> None:
        self.mm.close()

    def destroy(self) -> None:
        self.mm.close()
        self.path.unlink(missing_ok=True)


class MappedFileQueue:
    """The segments of one logical byte space, oldest first, all ``segment_bytes`` long."""

    def __init__(self, directory: Path, segment_bytes: int, sync_dir: bool = False, allocate_step: int = 0) -> None:
        self.directory = directory
        self.segment_bytes = segment_bytes
        #: 0: segments are allocated whole; else they grow by this many bytes (MappedFile.ensure_allocated).
        self.allocate_step = allocate_step
        self._sync_dir = sync_dir
        self.segments: list[MappedFile] = []

    def load(self) -> None:
        """Map every existing segment, in offset order; all are marked full until the owner's
        recovery says how much of the last ones is written."""
        if not self.directory.is_dir():
            return
        names = sorted(
            p.name for p in self.directory.iterdir()
            if p.is_file() and len(p.name) == NAME_DIGITS and p.name.isdigit()
        )
        for i, name in enumerate(names):
            start = int(name)
            if start % self.segment_bytes:
                raise ValueError(
                    f"segment {self.directory / name} does not start at a multiple of the segment size "
                    f"{self.segment_bytes}"
                )
            if self.segments and start != self.segments[-1].start + self.segment_bytes:
                raise ValueError(f"segment {self.directory / name} leaves a gap after the previous segment")
            last = i == len(names) - 1
            seg = MappedFile(self.directory / name, start, self.segment_bytes, create=False, allow_short=last,
                             allocate_step=self.allocate_step)
            seg.wrote = seg.size
            self.segments.append(seg)

    @property
    def min_offset(self) -> int:
        return self.segments[0].start if self.segments else 0

    @property
    def max_offset(self) -> int:
        return self.segments[-1].end if self.segments else 0

    def find(self, offset: int) -> MappedFile | None:
        """The segment holding logical byte ``offset``, or None if it was deleted or never made."""
        if not self.segments:
            return None
        index = offset // self.segment_bytes - self.segments[0].start // self.segment_bytes
        if 0 <= index < len(self.segments):
            return self.segments[index]
        return None

    def create(self, start: int) -> MappedFile:
        """Add the segment starting at ``start`` (the next one, or the first of an empty queue)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        seg = MappedFile(self.directory / f"{start:0{NAME_DIGITS}d}", start, self.segment_bytes, create=True,
                         allocate_step=self.allocate_step)
        self.segments.append(seg)
        if self._sync_dir:
            fd = os.open(self.directory, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        return seg

    def writable(self) -> MappedFile:
        """The last segment if it has room, else a new one after it (the first at 0 if none)."""
        if self.segments and self.segments[-1].wrote < self.segment_bytes:
            return self.segments[-1]
        return self.create(self.segments[-1].start + self.segment_bytes if self.segments else 0)

    def delete_first(self) -> None:
        self.segments.pop(0).destroy()

    def delete_last(self) -> None:
        self.segments.pop().destroy()

    def close(self) -> None:
        for seg in self.segments:
            seg.close()
        self.segments.clear()
