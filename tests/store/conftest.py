"""Fixtures for the store tests: a store factory on simulated time with small segments."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from reference.clock import SimClock
from reference.store.config import MessageStoreConfig
from reference.store.store import MessageStore

#: Small files so that a few hundred messages roll segments and retention has something to delete.
SMALL = dict(commit_log_segment_bytes=4096, consume_queue_units_per_segment=10)


class DiskUsage:
    """An injectable disk-usage probe (fraction of the partition used)."""

    def __init__(self) -> None:
        self.ratio = 0.10

    def __call__(self) -> float:
        return self.ratio


@pytest.fixture
def clock() -> SimClock:
    return SimClock()


@pytest.fixture
def disk() -> DiskUsage:
    return DiskUsage()


@pytest.fixture
def make_store(tmp_path: Path, clock: SimClock, disk: DiskUsage) -> Iterator[Callable[..., MessageStore]]:
    """``make_store(name="s", **config_overrides)``; the same name reopens the same directory."""
    opened: list[MessageStore] = []

    def make(name: str = "s", **overrides: object) -> MessageStore:
        config = MessageStoreConfig(**{**SMALL, **overrides})  # type: ignore[arg-type]
        store = MessageStore(tmp_path / name, config, clock, disk_usage_ratio=disk)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()
