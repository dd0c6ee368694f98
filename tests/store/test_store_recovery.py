"""Restart and crash recovery: acknowledged messages survive, torn tails vanish, indexes are rebuilt."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from reference.clock import SimClock
from reference.store import mapped_file
from reference.store.config import MessageStoreConfig
from reference.store.message import Message, StoredMessage
from reference.store.store import MessageStore


def _all(store: MessageStore, topic: str, queue_id: int) -> list[StoredMessage]:
    out: list[StoredMessage] = []
    offset = store.get_min_offset_in_queue(topic, queue_id)
    while offset < store.get_max_offset_in_queue(topic, queue_id):
        result = store.get_message("g", topic, queue_id, offset, 32, None)
        out.extend(result.messages)
        offset = result.next_begin_offset
    return out


def _fill(store: MessageStore, n: int) -> list[Message]:
    store.create_topic("T", 2)
    sent = [
        Message("T", f"body-{i}".encode() * (i % 9 + 1), i % 2, tags=f"t{i % 3}", keys=f"k{i}",
                properties={"p": str(i)}, born_timestamp=1000 + i, reconsume_times=i % 4)
        for i in range(n)
    ]
    for m in sent:
        store.put_message(m)
    return sent


def _same(stored: StoredMessage, sent: Message) -> bool:
    return (
        stored.body == sent.body and stored.tags == sent.tags and stored.keys == sent.keys
        and dict(stored.properties) == dict(sent.properties) and stored.born_timestamp == sent.born_timestamp
        and stored.reconsume_times == sent.reconsume_times and stored.queue_id == sent.queue_id
    )


@pytest.mark.req("STORE-5")
def test_messages_survive_close_and_reopen(make_store) -> None:
    store = make_store()
    sent = _fill(store, 120)
    before = {q: _all(store, "T", q) for q in (0, 1)}
    store.close()
    again = make_store()
    assert again.topics() == {"T": 2}
    for q in (0, 1):
        assert _all(again, "T", q) == before[q]
        assert all(_same(s, m) for s, m in zip(before[q], [m for m in sent if m.queue_id == q], strict=True))


@pytest.mark.req("STORE-26")
def test_messages_survive_a_killed_process(tmp_path: Path) -> None:
    """An append that returned is in the page cache: a process killed without close loses nothing."""
    script = textwrap.dedent(
        f"""
        import os, signal
        from reference.clock import SimClock
        from reference.store.config import MessageStoreConfig
        from reference.store.message import Message
        from reference.store.store import MessageStore
        config = MessageStoreConfig(commit_log_segment_bytes=4096)
        store = MessageStore({str(tmp_path / "d")!r}, config, SimClock())
        store.create_topic("T", 1)
        for i in range(200):
            store.put_message(Message("T", b"m%d" % i, 0))
        os.kill(os.getpid(), signal.SIGKILL)  # no close, no flush
        """
    )
    killed = subprocess.run([sys.executable, "-c", script], timeout=60, capture_output=True)
    assert killed.returncode == -9, killed.stderr
    store = MessageStore(tmp_path / "d", MessageStoreConfig(commit_log_segment_bytes=4096), SimClock())
    try:
        assert [m.body for m in _all(store, "T", 0)] == [b"m%d" % i for i in range(200)]
    finally:
        store.close()


def _tear_last_record(tmp_path: Path, store: MessageStore, how: str) -> tuple[int, int]:
    """Damage the last record in place; returns (its commit-log offset, its size)."""
    last = store.get_message("g", "T", 1, store.get_max_offset_in_queue("T", 1) - 1, 1, None).messages[0]
    last0 = store.get_message("g", "T", 0, store.get_max_offset_in_queue("T", 0) - 1, 1, None).messages[0]
    victim = max((last, last0), key=lambda m: m.commit_log_offset)
    store.close()
    segment = 4096
    path = tmp_path / "s" / "commitlog" / f"{victim.commit_log_offset // segment * segment:020d}"
    raw = bytearray(path.read_bytes())
    pos = victim.commit_log_offset % segment
    if how == "zeroed tail":  # the second half never reached the disk
        half = victim.size // 2
        raw[pos + half:pos + victim.size] = bytes(victim.size - half)
    elif how == "flipped body byte":
        raw[pos + victim.size - 1] ^= 0xFF
    elif how == "bad length":
        raw[pos:pos + 4] = (victim.size + 7).to_bytes(4, "big")
    path.write_bytes(bytes(raw))
    return victim.commit_log_offset, victim.size


@pytest.mark.req("STORE-6")
@pytest.mark.parametrize("how", ["zeroed tail", "flipped body byte", "bad length"])
def test_torn_tail_is_dropped_and_appends_continue(make_store, tmp_path: Path, how: str) -> None:
    store = make_store()
    _fill(store, 41)
    before = {q: _all(store, "T", q) for q in (0, 1)}
    victim_offset, _ = _tear_last_record(tmp_path, store, how)
    victim_queue = 0  # message 40 (the last) went to queue 40 % 2
    reopened = make_store()
    assert reopened.get_commit_log_max_offset() == victim_offset
    assert _all(reopened, "T", 1) == before[1]
    assert _all(reopened, "T", victim_queue) == before[victim_queue][:-1]
    assert reopened.get_max_offset_in_queue("T", victim_queue) == len(before[victim_queue]) - 1
    # The next append takes the torn message's place, in the log and in the queue.
    result = reopened.put_message(Message("T", b"after", victim_queue, tags="new"))
    assert result.commit_log_offset == victim_offset
    assert result.queue_offset == len(before[victim_queue]) - 1
    assert _all(reopened, "T", victim_queue)[-1].body == b"after"
    reopened.close()
    third = make_store()
    assert [m.body for m in _all(third, "T", victim_queue)][-1] == b"after"


@pytest.mark.req("STORE-6")
def test_garbage_after_the_end_is_erased(make_store, tmp_path: Path) -> None:
    store = make_store()
    _fill(store, 10)
    end = store.get_commit_log_max_offset()
    store.close()
    path = tmp_path / "s" / "commitlog" / f"{0:020d}"
    raw = bytearray(path.read_bytes())
    raw[end + 100:end + 110] = b"\xAB" * 10  # stale bytes past the last record
    path.write_bytes(bytes(raw))
    reopened = make_store()
    assert reopened.get_commit_log_max_offset() == end
    reopened.close()
    assert path.read_bytes()[end:] == bytes(4096 - end)


@pytest.mark.req("STORE-7")
def test_missing_consume_queue_units_are_rebuilt(make_store, tmp_path: Path) -> None:
    store = make_store()
    _fill(store, 30)
    before = {q: _all(store, "T", q) for q in (0, 1)}
    store.close()
    # Lose the last 3 units of queue 0 (the process died between commit log and consume queue)...
    last_cq = sorted((tmp_path / "s" / "consumequeue" / "T" / "0").iterdir())[-1]
    raw = bytearray(last_cq.read_bytes())
    written = max(i for i in range(0, len(raw), 20) if raw[i:i + 20] != bytes(20)) + 20
    raw[written - 60:written] = bytes(60)
    last_cq.write_bytes(bytes(raw))
    # ...and the whole index of queue 1.
    shutil.rmtree(tmp_path / "s" / "consumequeue" / "T" / "1")
    reopened = make_store()
    for q in (0, 1):
        assert _all(reopened, "T", q) == before[q]
        assert reopened.get_max_offset_in_queue("T", q) == 15


@pytest.mark.req("STORE-7")
def test_units_pointing_past_the_log_end_are_dropped(make_store, tmp_path: Path) -> None:
    store = make_store()
    _fill(store, 20)
    last = store.get_message("g", "T", 1, 9, 1, None).messages[0]
    store.close()
    # The commit log lost its last record (message 19, queue 1) but the index kept its unit.
    path = tmp_path / "s" / "commitlog" / f"{0:020d}"
    raw = bytearray(path.read_bytes())
    raw[last.commit_log_offset:last.commit_log_offset + last.size] = bytes(last.size)
    path.write_bytes(bytes(raw))
    reopened = make_store()
    assert reopened.get_max_offset_in_queue("T", 1) == 9
    assert reopened.get_message("g", "T", 1, 9, 1, None).status.name == "OFFSET_OVERFLOW_ONE"


@pytest.mark.req("STORE-7")
def test_index_rebuilt_from_a_trimmed_commit_log_starts_at_its_first_message(
    make_store, clock, tmp_path: Path
) -> None:
    # 7 units per index segment: the rebuilt index starts mid-segment (offset 20 of [14, 21)).
    store = make_store(commit_log_segment_bytes=1012, consume_queue_units_per_segment=7)
    store.create_topic("T", 1)
    for i in range(40):  # 100-byte records: 10 per segment
        store.put_message(Message("T", b"x" * 17, 0))
        if i == 19:
            clock.advance(73 * 3600 * 1000)
    store.request_manual_delete()
    store.run_retention()
    assert store.get_min_offset_in_queue("T", 0) == 20
    kept = _all(store, "T", 0)
    store.close()
    shutil.rmtree(tmp_path / "s" / "consumequeue")
    reopened = make_store(commit_log_segment_bytes=1012, consume_queue_units_per_segment=7)
    assert reopened.get_min_offset_in_queue("T", 0) == 20
    assert reopened.get_max_offset_in_queue("T", 0) == 40
    assert _all(reopened, "T", 0) == kept
    assert reopened.get_message("g", "T", 0, 5, 32, None).status.name == "OFFSET_TOO_SMALL"
    assert reopened.put_message(Message("T", b"y", 0)).queue_offset == 40
    reopened.close()
    third = make_store(commit_log_segment_bytes=1012, consume_queue_units_per_segment=7)
    assert [m.body for m in _all(third, "T", 0)] == [m.body for m in kept] + [b"y"]


@pytest.mark.req("STORE-26")
def test_sync_flush_msyncs_each_append(make_store, monkeypatch) -> None:
    flushed: list[tuple[int, int]] = []
    original = mapped_file.MappedFile.flush

    def counting(self, begin: int, end: int) -> None:
        flushed.append((begin, end))
        original(self, begin, end)

    monkeypatch.setattr(mapped_file.MappedFile, "flush", counting)
    store = make_store(flush_disk_type="SYNC")
    sent = _fill(store, 60)  # rolls a few segments: the end markers are flushed too
    appended = len(flushed)
    assert appended >= 60
    store.close()
    again = make_store(flush_disk_type="SYNC")
    assert [m.body for q in (0, 1) for m in _all(again, "T", q)] == [
        m.body for q in (0, 1) for m in sent if m.queue_id == q
    ]
    async_store = make_store("async")
    _fill(async_store, 10)
    assert len(flushed) == appended  # ASYNC appends never msync


@pytest.mark.req("STORE-20")
@pytest.mark.parametrize("length", [0, 1000])
def test_newest_segment_left_short_by_a_crash_is_extended(make_store, tmp_path: Path, length: int) -> None:
    """A kill between creating the next segment file and sizing it leaves it short (found by the
    SIGKILL durability test); nothing was written to it, so recovery zero-extends it."""
    store = make_store()
    _fill(store, 30)
    before = {q: _all(store, "T", q) for q in (0, 1)}
    log_dir = tmp_path / "s" / "commitlog"
    newest = max(int(p.name) for p in log_dir.iterdir())
    store.close()
    (log_dir / mapped_file_name(newest + 4096)).write_bytes(bytes(length))
    again = make_store()
    for q in (0, 1):
        assert _all(again, "T", q) == before[q]
    again.put_message(Message("T", b"after", 0, tags="A"))
    assert _all(again, "T", 0)[-1].body == b"after"


@pytest.mark.req("STORE-20")
def test_short_segment_in_the_middle_is_refused(make_store, tmp_path: Path) -> None:
    store = make_store()
    _fill(store, 200)
    store.close()
    first = min((tmp_path / "s" / "commitlog").iterdir())
    first.write_bytes(first.read_bytes()[:100])
    with pytest.raises(ValueError, match="configured segment size"):
        make_store()


def mapped_file_name(offset: int) -> str:
    return str(offset).zfill(mapped_file.NAME_DIGITS)


@pytest.mark.req("STORE-6")
def test_a_torn_record_cuts_recovery_there(tmp_path: Path) -> None:
    """tear_record, as the runners' torn restart uses it: the torn record and what follows are gone after
    recovery, the next append takes its offsets; a position where no record starts is refused, untouched."""
    from reference.store.record import tear_record

    config = MessageStoreConfig(commit_log_segment_bytes=4096)
    store = MessageStore(tmp_path / "d", config, SimClock())
    store.create_topic("T", 1)
    results = [store.put_message(Message("T", b"m%d" % i, 0)) for i in range(5)]
    store.close()
    with pytest.raises(ValueError, match="no record starts there"):
        tear_record(tmp_path / "d" / "commitlog", 4096, results[3].commit_log_offset + 1)
    tear_record(tmp_path / "d" / "commitlog", 4096, results[3].commit_log_offset)
    store = MessageStore(tmp_path / "d", config, SimClock())
    try:
        assert [m.body for m in _all(store, "T", 0)] == [b"m0", b"m1", b"m2"]
        again = store.put_message(Message("T", b"again", 0))
        assert (again.queue_offset, again.commit_log_offset) == (3, results[3].commit_log_offset)
    finally:
        store.close()
