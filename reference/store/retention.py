"""CleanService: *when* the store may delete expired files (seed 002 §2).

The rule, per clean run: nothing is deleted unless one of three triggers holds —

* time: the clock's UTC hour is one of ``delete_when`` (default "04");
* space: the disk holding the store is more than ``disk_max_used_space_ratio`` percent used
  (an unreadable ratio, reported as negative, counts as full, as in RocketMQ);
* manual: :meth:`request_manual_delete` asked for it (it forces the next N runs, RocketMQ's
  manualDeleteFileSeveralTimes).

When a trigger holds, commit-log segments (oldest first, never the one being written) are deleted
while their newest message is at least ``file_reserved_time_hours`` old. Whether anyone consumed
them does not matter.

One run may replace fileReservedTime (:meth:`CleanService.reserved_hours_for_one_run`): that run is
triggered whatever the hour or disk, and judges files by the given hours instead; with 0, every
segment but the one being written is expired. A broker's runner uses it to offer the control
channel's ``retention_expire`` (``conformance.targets.control``) on real time.

The mechanics (which segments, consume-queue cleanup, min offset correction) belong to the commit log,
the consume queues and the store; this class owns only the decision.
"""

from __future__ import annotations

import contextlib
import datetime
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

from reference.clock import Clock
from reference.store.config import MessageStoreConfig

_MS_PER_HOUR = 3_600_000


def disk_usage_of(path: Path) -> Callable[[], float]:
    """A disk-usage probe for the partition holding ``path``: used / total, in [0, 1]."""

    def ratio() -> float:
        usage = shutil.disk_usage(path)
        return usage.used / usage.total if usage.total else -1.0

    return ratio


class CleanService:
    def __init__(
        self, config: MessageStoreConfig, clock: Clock, disk_usage_ratio: Callable[[], float]
    ) -> None:
        self._config = config
        self._clock = clock
        self._disk_usage_ratio = disk_usage_ratio
        self._manual_delete_times = 0
        #: fileReservedTime of the run in progress when one run replaced it (None: the config's).
        self._one_run_reserved_hours: int | None = None

    def request_manual_delete(self, times: int | None = None) -> None:
        """Force the next ``times`` runs (default ``manual_delete_file_times``) to delete expired files
        whatever the hour or disk usage."""
        self._manual_delete_times = self._config.manual_delete_file_times if times is None else times

    def deletion_triggered(self) -> bool:
        """Whether this run may delete (time, space or manual); a manual request is used up by one run.
        A run whose fileReservedTime was replaced is triggered (and leaves any manual request alone)."""
        if self._one_run_reserved_hours is not None:
            return True
        hour = datetime.datetime.fromtimestamp(self._clock.now_ms() / 1000, datetime.UTC).hour
        # Read at every run, as RocketMQ's isTimeToDelete does: deleteWhen may change at run time.
        time_up = hour in self._config.delete_when_hours()
        ratio = self._disk_usage_ratio()
        space_full = ratio < 0 or ratio > self._config.disk_max_used_space_ratio / 100
        manual = self._manual_delete_times > 0
        if manual:
            self._manual_delete_times -= 1
        return time_up or space_full or manual

    def is_expired(self, newest_store_timestamp: int) -> bool:
        """Whether a file whose newest message was stored then is past ``file_reserved_time_hours`` (or
        the hours that replace it for the run in progress)."""
        hours = self._one_run_reserved_hours
        reserved_ms = (self._config.file_reserved_time_hours if hours is None else hours) * _MS_PER_HOUR
        return self._clock.now_ms() >= newest_store_timestamp + reserved_ms

    @contextlib.contextmanager
    def reserved_hours_for_one_run(self, hours: int | None) -> Iterator[None]:
        """Within the block (one clean run), ``hours`` replaces ``file_reserved_time_hours`` and the run is
        triggered at any hour; None leaves the run as configured. The configuration itself never changes."""
        if hours is not None and (not isinstance(hours, int) or hours < 0):
            raise ValueError(f"file_reserved_hours: must be an integer >= 0, got {hours!r}")
        self._one_run_reserved_hours = hours
        try:
            yield
        finally:
            self._one_run_reserved_hours = None
