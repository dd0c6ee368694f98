"""``MessageStore.run_retention(file_reserved_hours=...)``: one clean run with fileReservedTime replaced.

What a runner's ``retention_expire`` control (``conformance.targets.control``) uses on real time: with 0 hours
every commit-log segment but the one being written is expired, whatever the hour, the disk or a manual
request; the configuration and later runs are untouched.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reference.store.message import Message
from reference.store.store import MessageStore

HOUR_MS = 3_600_000
SEGMENT_OF_10 = 1012  # ten 100-byte records per commit-log segment
BODY = b"x" * 17  # topic "T", no tags: a 100-byte record


def _store(make_store) -> MessageStore:  # type: ignore[no-untyped-def]
    store = make_store(commit_log_segment_bytes=SEGMENT_OF_10, consume_queue_units_per_segment=10)
    store.create_topic("T", 1)
    for _ in range(25):  # segments 0 and 1 full, 2 being written
        store.put_message(Message("T", BODY, 0))
    return store


@pytest.mark.req("RETAIN-5", "RETAIN-12")
def test_zero_hours_expires_every_segment_but_the_one_being_written(make_store, tmp_path: Path) -> None:
    store = _store(make_store)
    assert store.run_retention() == 0, "young files, not 04:00, no manual request: nothing goes"
    assert store.run_retention(file_reserved_hours=0) == 2
    assert sorted(p.name for p in (tmp_path / "s" / "commitlog").iterdir()) == [f"{2 * SEGMENT_OF_10:020d}"]
    assert store.get_min_offset_in_queue("T", 0) == 20, "phases 2 and 3 ran in the same call"
    assert store.config.file_reserved_time_hours == 72, "the configuration is not changed"
    assert store.run_retention(file_reserved_hours=0) == 0, "the segment being written stays"


def test_the_replacement_lasts_one_run_and_leaves_manual_requests_alone(make_store, clock) -> None:  # type: ignore[no-untyped-def]
    store = _store(make_store)
    store.request_manual_delete(times=1)
    assert store.run_retention(file_reserved_hours=1) == 0, "one hour: the files are younger"
    clock.advance(HOUR_MS)
    for _ in range(10):  # segment 2 fills, 3 is being written
        store.put_message(Message("T", BODY, 0))
    assert store.run_retention() == 0, "the manual request is still there, but 72 h hold the files"
    assert store.run_retention(file_reserved_hours=1) == 2, "segments 0 and 1 are an hour old; 2 is not"


@pytest.mark.parametrize("hours", [-1, 1.5, "0"])
def test_bad_hours_are_refused(make_store, hours) -> None:  # type: ignore[no-untyped-def]
    store = _store(make_store)
    with pytest.raises(ValueError, match="file_reserved_hours"):
        store.run_retention(file_reserved_hours=hours)
    assert store.run_retention(file_reserved_hours=0) == 2, "a refused run leaves nothing behind"


@pytest.mark.req("RETAIN-12", "RETAIN-9")
def test_one_run_deletes_at_most_a_batch_and_expiry_runs_until_none_is_left(make_store, tmp_path: Path) -> None:
    """RocketMQ deletes at most 10 commit-log segments a clean run (DELETE_FILES_BATCH_MAX); each run corrects
    the min offsets to what it left. A queue whose messages end in the tenth segment keeps the min offset the
    first run gave it when the second empties it, on a 4.x-like store (found by mqtck diff against 4.9.7)."""
    store = make_store(commit_log_segment_bytes=SEGMENT_OF_10, consume_queue_units_per_segment=10,
                       raise_min_of_emptied_queue=False)
    store.create_topic("T", 1)
    store.create_topic("U", 1)
    for _ in range(105):  # T fills segments 0-9 and half of 10
        store.put_message(Message("T", BODY, 0))
    for _ in range(30):  # U fills the rest of 10, then 11-13; 13 is being written
        store.put_message(Message("U", BODY, 0))
    assert store.config.delete_files_batch_max == 10
    assert store.run_retention(file_reserved_hours=0) == 10, "one run: a batch of ten"
    assert store.get_min_offset_in_queue("T", 0) == 100, "the first unit in segment 10"
    assert store.expire_all() == 3, "the rest, in one more run"
    assert len(list((tmp_path / "s" / "commitlog").iterdir())) == 1
    assert store.get_min_offset_in_queue("T", 0) == 100, "emptied by the second run: 4.x keeps the min"
    assert store.get_min_offset_in_queue("U", 0) == 25, "the first unit in the segment being written"
