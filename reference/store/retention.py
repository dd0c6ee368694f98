"""CleanService: *when* the store may delete expired files (seed 002 §2).

The rule, per clean run: nothing is deleted unless one of three triggers holds —

* time: the clock's UTC hour is one of ``delete_when`` (default "04");
* space: the disk holding the store is more than ``disk_max_used_space_ratio`` percent used
  (an unreadable ratio, reported as negative, counts as full, as in RocketMQ);
* manual: :meth:`request_manual_delete` asked for it (it forces the next N runs, RocketMQ's
  manualDeleteFileSeveralTimes).

When a trigger holds, commit-log segments (oldest first, never the one being written) are deleted
while their newest message is at least ``file_reserved_time_hours`` old. Whether anyone consumed
them does not matter. The mechanics (which segments, consume-queue cleanup, min offset correction)
belong to the commit log, the consume queues and the store; this class owns only the decision.
"""

from __future__ import annotations

import datetime
import shutil
from collections.abc import Callable
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
        self._delete_hours = config.delete_when_hours()
        self._manual_delete_times = 0

    def request_manual_delete(self, times: int | None = None) -> None:
        """Force the next ``times`` runs (default ``manual_delete_file_times``) to delete expired files
        whatever the hour or disk usage."""
        self._manual_delete_times = self._config.manual_delete_file_times if times is None else times

    def deletion_triggered(self) -> bool:
        """Whether this run may delete (time, space or manual); a manual request is used up by one run."""
        hour = datetime.datetime.fromtimestamp(self._clock.now_ms() / 1000, datetime.UTC).hour
        time_up = hour in self._delete_hours
        ratio = self._disk_usage_ratio()
        space_full = ratio < 0 or ratio > self._config.disk_max_used_space_ratio / 100
        manual = self._manual_delete_times > 0
        if manual:
            self._manual_delete_times -= 1
        return time_up or space_full or manual

    def is_expired(self, newest_store_timestamp: int) -> bool:
        """Whether a file whose newest message was stored then is past ``file_reserved_time_hours``."""
        reserved_ms = self._config.file_reserved_time_hours * _MS_PER_HOUR
        return self._clock.now_ms() >= newest_store_timestamp + reserved_ms
