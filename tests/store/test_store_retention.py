"""Retention (seed 002 §2): which files go, when, and what happens to each queue's min offset."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from reference.clock import SimClock
from reference.rules.status import GetMessageStatus
from reference.store.message import Message
from reference.store.store import MessageStore

HOUR_MS = 3_600_000
SEGMENT_OF_10 = 1012  # ten 100-byte records per commit-log segment
BODY = b"x" * 17  # topic "T", no tags: a 100-byte record


def _utc_hour(clock: SimClock) -> int:
    return datetime.datetime.fromtimestamp(clock.now_ms() / 1000, datetime.UTC).hour


def _advance_to_hour(clock: SimClock, hour: int) -> None:
    """Move to the next instant whose UTC hour is ``hour`` (at least one step)."""
    clock.advance(60_000)
    while _utc_hour(clock) != hour:
        clock.advance(60_000)


def _segments(tmp_path: Path, *parts: str) -> list[str]:
    return sorted(p.name for p in (tmp_path / "s").joinpath(*parts).iterdir())


def _store(make_store, **overrides) -> MessageStore:
    store = make_store(
        commit_log_segment_bytes=SEGMENT_OF_10, consume_queue_units_per_segment=10, **overrides
    )
    store.create_topic("T", 1)
    return store


def _put(store: MessageStore, n: int) -> None:
    for _ in range(n):
        store.put_message(Message("T", BODY, 0))


@pytest.mark.req("RETAIN-1")
def test_files_are_kept_for_file_reserved_time(make_store, clock) -> None:
    store = _store(make_store)
    _put(store, 30)  # segments 0, 1, 2; the last is still being written
    clock.advance(72 * HOUR_MS - 1)
    store.request_manual_delete()
    assert store.clean_commit_log() == 0  # 1 ms short of 72 h
    clock.advance(1)
    assert store.clean_commit_log() == 2
    assert store.get_commit_log_min_offset() == 2 * SEGMENT_OF_10


@pytest.mark.req("RETAIN-11")
def test_a_young_segment_stops_deletion_of_the_ones_after_it(make_store, clock) -> None:
    store = _store(make_store, file_reserved_time_hours=1)
    _put(store, 10)  # segment 0: old
    clock.advance(HOUR_MS)
    _put(store, 10)  # segment 1: young
    _put(store, 1)  # segment 2: being written
    store.request_manual_delete()
    assert store.clean_commit_log() == 1
    assert store.get_commit_log_min_offset() == SEGMENT_OF_10


@pytest.mark.req("RETAIN-2")
def test_expired_files_go_at_the_delete_when_hour(make_store, clock) -> None:
    store = _store(make_store, delete_when="04;16")
    _put(store, 30)
    clock.advance(73 * HOUR_MS)
    _advance_to_hour(clock, 3)
    assert store.clean_commit_log() == 0  # expired, but 03:xx UTC and no other trigger
    _advance_to_hour(clock, 4)
    assert store.clean_commit_log() == 2
    _put(store, 20)
    clock.advance(73 * HOUR_MS)
    _advance_to_hour(clock, 15)
    assert store.clean_commit_log() == 0
    _advance_to_hour(clock, 16)
    assert store.clean_commit_log() > 0


@pytest.mark.req("RETAIN-3")
def test_disk_usage_above_the_ratio_triggers_deletion(make_store, clock, disk) -> None:
    store = _store(make_store)
    _put(store, 30)
    clock.advance(73 * HOUR_MS)
    _advance_to_hour(clock, 10)
    disk.ratio = 0.75
    assert store.clean_commit_log() == 0  # at the ratio is not above it
    disk.ratio = 0.7501
    assert store.clean_commit_log() == 2


@pytest.mark.req("RETAIN-3", "RETAIN-10")
def test_disk_usage_never_deletes_unexpired_files(make_store, clock, disk) -> None:
    store = _store(make_store)
    _put(store, 30)
    disk.ratio = 0.99
    assert store.clean_commit_log() == 0


@pytest.mark.req("RETAIN-4")
def test_manual_delete_forces_a_fixed_number_of_runs(make_store, clock) -> None:
    store = _store(make_store)
    _advance_to_hour(clock, 10)
    _put(store, 10)
    store.request_manual_delete(times=2)
    assert store.clean_commit_log() == 0  # run 1: nothing expired yet
    clock.advance(73 * HOUR_MS)
    _put(store, 10)
    assert store.clean_commit_log() == 1  # run 2: still forced
    _put(store, 10)
    clock.advance(73 * HOUR_MS)
    _put(store, 1)
    _advance_to_hour(clock, 10)
    assert store.clean_commit_log() == 0  # run 3: the request is used up
    store.request_manual_delete()  # default: manual_delete_file_times (20) runs
    for _ in range(20):
        store.clean_commit_log()
    _put(store, 10)
    clock.advance(73 * HOUR_MS)
    _put(store, 1)
    _advance_to_hour(clock, 10)
    assert store.clean_commit_log() == 0


@pytest.mark.req("RETAIN-5")
def test_the_segment_being_written_is_never_deleted(make_store, clock, tmp_path: Path) -> None:
    store = _store(make_store)
    _put(store, 25)
    clock.advance(1000 * HOUR_MS)
    store.request_manual_delete()
    store.run_retention()
    assert _segments(tmp_path, "commitlog") == [f"{2 * SEGMENT_OF_10:020d}"]
    assert _segments(tmp_path, "consumequeue", "T", "0") == [f"{20 * 20:020d}"]
    assert store.get_min_offset_in_queue("T", 0) == 20
    store.put_message(Message("T", BODY, 0))
    offsets = [m.queue_offset for m in store.get_message("g", "T", 0, 20, 32, None).messages]
    assert offsets == list(range(20, 26))


@pytest.mark.req("RETAIN-6")
def test_index_segments_pointing_only_below_the_log_start_are_deleted(make_store, clock, tmp_path) -> None:
    # Two queues interleaved: index segment [20, 30) of each queue spans log segments 4 and 5.
    store = make_store(commit_log_segment_bytes=SEGMENT_OF_10, consume_queue_units_per_segment=10)
    store.create_topic("T", 2)
    for i in range(60):
        store.put_message(Message("T", BODY, i % 2))
        if i == 49:
            clock.advance(73 * HOUR_MS)
    store.request_manual_delete()
    assert store.clean_commit_log() == 5  # log segments 0..4 (messages 0..49) expired; 5 is young
    assert store.clean_consume_queues() == 4  # per queue [0, 10) and [10, 20); [20, 30) is half alive
    assert _segments(tmp_path, "consumequeue", "T", "1") == [f"{20 * 20:020d}"]
    assert store.get_min_offset_in_queue("T", 1) == 0  # not corrected yet: that is phase 3


def _retain_with_queue_1_emptied(make_store, clock, **overrides):  # type: ignore[no-untyped-def]
    """Queues 0 and 1 take turns filling commit-log segments 0..3 (messages 0..39), which expire; then queue 0
    and queue 2 get one young message each, so queue 1 has no message left at all. Returns (store, heard)."""
    store = make_store(commit_log_segment_bytes=SEGMENT_OF_10, consume_queue_units_per_segment=10, **overrides)
    store.create_topic("T", 3)
    heard: list[tuple[str, int, int]] = []
    store.add_retention_listener(lambda topic, queue, new_min: heard.append((topic, queue, new_min)))
    for i in range(40):
        store.put_message(Message("T", BODY, i % 2))
    clock.advance(73 * HOUR_MS)
    store.put_message(Message("T", BODY, 0))
    store.put_message(Message("T", BODY, 2))
    store.request_manual_delete()
    store.run_retention()  # commit-log segments 0..3 (messages 0..39) go
    return store, heard


@pytest.mark.req("RETAIN-12", "RETAIN-9")
def test_min_offset_rises_and_listeners_hear_it(make_store, clock) -> None:
    store, heard = _retain_with_queue_1_emptied(make_store, clock)
    # RETAIN-7: queue 0's min is its young message; RETAIN-9: queue 1, emptied, rises to its max.
    assert sorted(heard) == [("T", 0, 20), ("T", 1, 20)]  # queue 2 lost nothing: no event
    assert store.get_min_offset_in_queue("T", 1) == store.get_max_offset_in_queue("T", 1) == 20
    for queue in (0, 1):
        result = store.get_message("g", "T", queue, 3, 32, None)
        assert (result.status, result.next_begin_offset) == (GetMessageStatus.OFFSET_TOO_SMALL, 20)
    store.run_retention()
    assert len(heard) == 2  # nothing rose again


@pytest.mark.req("RETAIN-12")
def test_an_emptied_queue_keeps_its_min_as_rocketmq_4_does(make_store, clock) -> None:
    """raise_min_of_emptied_queue=False (RocketMQ 4.x, how the reference runs against a 4.x broker): the emptied
    queue's min stays; a pull there finds its messages removed and moves past them (MESSAGE_WAS_REMOVING)."""
    store, heard = _retain_with_queue_1_emptied(make_store, clock, raise_min_of_emptied_queue=False)
    assert heard == [("T", 0, 20)]
    assert (store.get_min_offset_in_queue("T", 1), store.get_max_offset_in_queue("T", 1)) == (0, 20)
    result = store.get_message("g", "T", 1, 3, 32, None)
    assert result.status in (GetMessageStatus.OFFSET_FOUND_NULL, GetMessageStatus.MESSAGE_WAS_REMOVING)
    assert not result.messages and result.next_begin_offset > 3


@pytest.mark.req("RETAIN-8")
def test_retention_runs_on_the_clock(make_store, clock) -> None:
    store = _store(make_store)
    _put(store, 30)
    clock.advance(73 * HOUR_MS)
    store.request_manual_delete(times=1)
    store.start_periodic()
    clock.advance(59_999)
    assert store.get_commit_log_min_offset() == 0  # the first run is 60 s after start
    clock.advance(1)
    assert store.get_commit_log_min_offset() == 2 * SEGMENT_OF_10
    _put(store, 11)  # segment 2 (old) is now full; 3 is full and young; 4 is being written
    assert _utc_hour(clock) != 4
    clock.advance(600_000)  # 60 periodic runs: the manual request is used up, it is not 04:00
    assert store.get_commit_log_min_offset() == 2 * SEGMENT_OF_10
    _advance_to_hour(clock, 4)  # within 10 s of 04:00 a periodic run deletes segment 2
    assert store.get_commit_log_min_offset() == 3 * SEGMENT_OF_10
