"""ASYNC flush (RocketMQ's FlushRealTimeService): the commit log's new bytes are msync'ed every
``flush_interval_commit_log_ms`` once ``flush_commit_log_least_pages`` pages are dirty, and whatever is dirty every
``flush_commit_log_thorough_interval_ms``. The flushed offset is what a machine crash keeps: what lies past it is
the ASYNC loss window, bounded in time by these settings (SYNC has none: each append is flushed before it is
acknowledged)."""

from __future__ import annotations

from pathlib import Path

from reference.clock import SimClock
from reference.store.config import MessageStoreConfig
from reference.store.message import Message
from reference.store.store import MessageStore


def _store(tmp_path: Path, clock: SimClock, flush: str = "ASYNC") -> MessageStore:
    store = MessageStore(tmp_path / "store", MessageStoreConfig(flush_disk_type=flush), clock)
    store.create_topic("T", 1)
    store.start_periodic()
    return store


def test_async_flush_follows_the_interval_the_least_pages_and_the_thorough_interval(tmp_path: Path) -> None:
    clock = SimClock()
    store = _store(tmp_path, clock)
    small = store.put_message(Message("T", b"x" * 100, 0))
    assert store.flushed_offset == 0, "nothing is flushed before the flush service runs"
    clock.advance(500)
    assert store.flushed_offset == 0, "one small record is less than 4 dirty pages: it waits"
    for _ in range(200):
        store.put_message(Message("T", b"y" * 100, 0))
    end = store.get_commit_log_max_offset()
    assert end - small.commit_log_offset > 4 * 4096
    clock.advance(500)
    assert store.flushed_offset == end, "4 dirty pages or more are flushed at the next round"
    store.put_message(Message("T", b"z", 0))
    clock.advance(10_000)
    assert store.flushed_offset == store.get_commit_log_max_offset(), "the thorough interval flushes any tail"
    store.close()


def test_sync_flush_has_nothing_unflushed_after_an_acknowledged_append(tmp_path: Path) -> None:
    store = _store(tmp_path, SimClock(), "SYNC")
    result = store.put_message(Message("T", b"x", 0))
    assert result.commit_log_offset == 0 and store.flushed_offset == store.get_commit_log_max_offset() > 0
    store.close()


def test_a_recovered_store_counts_what_it_read_as_flushed(tmp_path: Path) -> None:
    clock = SimClock()
    store = _store(tmp_path, clock)
    store.put_message(Message("T", b"x" * 10, 0))
    end = store.get_commit_log_max_offset()
    store.close()
    again = MessageStore(tmp_path / "store", MessageStoreConfig(), clock)
    assert again.flushed_offset == end
    again.close()
