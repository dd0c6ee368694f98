"""The store's disk: when it is too full to write (seed 002 §2, STORE-22, STORE-23).

RocketMQ looks at the disk of the commit log at every clean run (CleanCommitLogService.isSpaceToDelete): used
above ``diskSpaceWarningLevelRatio`` (0.90) it marks the disk full, and the store refuses every write
(SERVICE_NOT_AVAILABLE) while pulls, pops and offset commits go on; at or below ``diskSpaceCleanForciblyRatio``
(0.85) it marks the disk OK again. Between the two the mark stays as it was, so writes do not flap at the line.

A write the file system itself cannot hold (no space left for a new segment, ENOSPC) also marks the disk full,
before the next check: the store refuses that write and stays whole, where a mapping over a file that could not
be allocated would have died with SIGBUS in the middle of a record.
"""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Iterator

from reference.rules.errors import InvalidRequest

#: OS errors that mean "no room left on this file system".
NO_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


class DiskFull(InvalidRequest):
    """A write refused because the store's disk is full (RocketMQ's SERVICE_NOT_AVAILABLE)."""

    def __init__(self, rule: str) -> None:
        super().__init__("disk", rule, "SERVICE_NOT_AVAILABLE")


class DiskGuard:
    """The disk-full mark of one store (RocketMQ's RunningFlags DISK_FULL bit)."""

    def __init__(self, warning_ratio: float, resume_ratio: float) -> None:
        self.warning_ratio = warning_ratio
        self.resume_ratio = resume_ratio
        self.full = False
        self._why = ""

    def check(self, used_ratio: float) -> None:
        """A clean run's look at the disk: mark it full above the warning level, OK at or below the resume level."""
        if used_ratio > self.warning_ratio:
            self.full = True
            self._why = (f"the disk holding the store is {used_ratio:.0%} used, above diskSpaceWarningLevelRatio "
                         f"{self.warning_ratio:.0%}; writes resume once it is at most {self.resume_ratio:.0%}")
        elif used_ratio <= self.resume_ratio:
            self.full = False

    def refuse_if_full(self) -> None:
        if self.full:
            raise DiskFull(self._why)

    @contextlib.contextmanager
    def writing(self, what: str) -> Iterator[None]:
        """Within the block, a file system with no room left (ENOSPC) becomes :meth:`ran_out` for ``what``."""
        try:
            yield
        except OSError as exc:
            if exc.errno not in NO_SPACE_ERRNOS:
                raise
            raise self.ran_out(what, exc) from None

    def ran_out(self, what: str, exc: OSError) -> DiskFull:
        """The file system refused ``what``: mark the disk full until a clean run finds room again."""
        self.full = True
        self._why = (f"no space left on the store's file system for {what} ({exc.strerror}); writes resume once "
                     f"a clean run finds the disk at most {self.resume_ratio:.0%} used")
        return DiskFull(self._why)
