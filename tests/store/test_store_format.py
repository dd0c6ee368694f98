"""Bytes on disk and ids: consume-queue units, tag hash codes, message ids, record placement."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from reference.rules.filter import SubscriptionData, tags_hash_code
from reference.store.consumequeue import CQ_ALLOCATE_STEP, CQ_STORE_UNIT_SIZE
from reference.store.message import Message, offset_msg_id, store_host_bytes
from reference.store.record import END_MARKER_BYTES, HEADER_BYTES


@pytest.mark.req("STORE-1")
def test_consume_queue_units_are_20_bytes_big_endian(make_store, tmp_path: Path) -> None:
    store = make_store()
    store.create_topic("T", 2)
    results = [store.put_message(Message("T", b"x" * (i + 1), 1, tags=f"t{i}")) for i in range(5)]
    store.close()
    (path,) = (tmp_path / "s" / "consumequeue" / "T" / "1").iterdir()  # one segment, whatever its name (STORE-24)
    raw = path.read_bytes()
    assert len(raw) == 10 * CQ_STORE_UNIT_SIZE  # the segment is preallocated: 10 units of 20 bytes
    for i, result in enumerate(results):
        phy, size, code = struct.unpack_from(">qiq", raw, i * 20)
        assert phy == result.commit_log_offset
        assert size == HEADER_BYTES + len("T") + len(f"t{i}") + i + 1
        assert code == tags_hash_code(f"t{i}")
    assert raw[5 * 20:] == bytes(5 * 20)  # nothing written past the last unit
    assert not (tmp_path / "s" / "consumequeue" / "T" / "0").exists()  # queue 0 never written


@pytest.mark.req("STORE-24")
def test_consume_queue_segments_are_named_by_byte_offset(make_store, tmp_path: Path) -> None:
    store = make_store()
    store.create_topic("T", 1)
    for _ in range(25):
        store.put_message(Message("T", b"b", 0))
    names = sorted(p.name for p in (tmp_path / "s" / "consumequeue" / "T" / "0").iterdir())
    assert names == [f"{0:020d}", f"{200:020d}", f"{400:020d}"]


@pytest.mark.req("STORE-25")
@pytest.mark.parametrize(
    "tag, code",
    [
        ("TagA", 2598919),
        ("", 0),
        ("hello", 99162322),
        ("polygenelubricants", -(2**31)),  # wraps to Integer.MIN_VALUE
        ("\u00e9", 233),
        ("\u6807\u7b7e", 857175),
        ("\U0001F600", 1772899),  # outside the BMP: hashed as its two UTF-16 surrogates
    ],
)
def test_tags_hash_code_is_java_string_hash_code(tag: str, code: int) -> None:
    assert tags_hash_code(tag) == code


@pytest.mark.req("STORE-25")
def test_negative_hash_code_is_stored_sign_extended(make_store, tmp_path: Path) -> None:
    store = make_store()
    store.create_topic("T", 1)
    store.put_message(Message("T", b"b", 0, tags="polygenelubricants"))
    store.close()
    raw = (tmp_path / "s" / "consumequeue" / "T" / "0" / f"{0:020d}").read_bytes()
    assert raw[12:20] == bytes.fromhex("FFFFFFFF80000000")


@pytest.mark.req("STORE-2")
def test_the_broker_filters_by_the_units_tag_hash_code(make_store) -> None:
    sub = SubscriptionData.parse("T", " A || C ")
    assert sub.matches(tags_hash_code("A")) and sub.matches(tags_hash_code("C"))
    assert not sub.matches(tags_hash_code("D"))
    store = make_store()
    store.create_topic("T", 1)
    for tag in ("A", "D", "C", None):
        store.put_message(Message("T", b"b", 0, tags=tag))
    got = store.get_message("g", "T", 0, 0, 32, sub)
    assert [m.tags for m in got.messages] == ["A", "C"]


@pytest.mark.req("STORE-25")
def test_filter_matches_by_code_and_client_rechecks_the_tag(make_store) -> None:
    assert tags_hash_code("Aa") == tags_hash_code("BB")  # a real Java collision
    sub = SubscriptionData.parse("T", " Aa || C ")
    assert sub.tags == {"Aa", "C"}
    assert sub.matches(tags_hash_code("BB"))  # the broker cannot tell them apart...
    assert not sub.matches_tag("BB")  # ...the client can
    assert sub.matches_tag("Aa") and sub.matches(None)
    assert not sub.matches(tags_hash_code("D"))
    store = make_store()
    store.create_topic("T", 1)
    for tag in ("Aa", "BB", "C", "D", None):
        store.put_message(Message("T", b"b", 0, tags=tag))
    got = store.get_message("g", "T", 0, 0, 32, sub)
    assert [m.tags for m in got.messages] == ["Aa", "BB", "C"]


@pytest.mark.req("STORE-3")
def test_offset_msg_id_layout() -> None:
    # protocols/rocketmq-remoting.md §6.4: 127.0.0.1:20911, physical offset 0x1AF.
    assert offset_msg_id(store_host_bytes(("127.0.0.1", 20911)), 0x1AF) == "7F000001000051AF00000000000001AF"


@pytest.mark.req("STORE-3")
def test_unique_id_is_uniq_key_else_offset_msg_id(make_store) -> None:
    store = make_store(store_host=("10.1.2.3", 10911))
    store.create_topic("T", 1)
    plain = store.put_message(Message("T", b"a", 0))
    uniq = "0100007F0000E81D00004AE184710100"
    keyed = store.put_message(Message("T", b"b", 0, properties={"UNIQ_KEY": uniq}))
    assert plain.msg_id == f"0A010203{10911:08X}{plain.commit_log_offset:016X}"
    assert plain.unique_id == plain.msg_id
    assert keyed.unique_id == uniq
    assert keyed.msg_id != keyed.unique_id
    got = store.get_message("g", "T", 0, 0, 32, None).messages
    assert [(m.msg_id, m.unique_id) for m in got] == [
        (plain.msg_id, plain.unique_id), (keyed.msg_id, keyed.unique_id)
    ]


@pytest.mark.req("STORE-4")
def test_records_never_span_segments(make_store) -> None:
    segment = 4096
    store = make_store(commit_log_segment_bytes=segment)
    store.create_topic("T", 3)
    sent = []
    for i in range(300):
        body = bytes([i % 256]) * (i * 7 % 500)
        result = store.put_message(Message("T", body, i % 3, tags=f"t{i % 4}", keys=f"k{i}"))
        sent.append((result, body))
    assert store.get_commit_log_max_offset() > 10 * segment  # it rolled many times
    for i, (result, body) in enumerate(sent):
        size = HEADER_BYTES + len("T") + len(f"t{i % 4}") + len(f"k{i}") + len(body)
        start = result.commit_log_offset
        assert start // segment == (start + size + END_MARKER_BYTES - 1) // segment
        got = store.get_message("g", "T", result.queue_id, result.queue_offset, 1, None).messages
        assert got[0].body == body and got[0].commit_log_offset == start and got[0].size == size


@pytest.mark.req("REMOTING-10")
def test_look_message_by_offset_finds_only_intact_records_starting_there(make_store) -> None:
    """CONSUMER_SEND_MSG_BACK names a message by any number a client sends: only a record's first byte finds it."""
    store = make_store()
    store.create_topic("T", 1)
    results = [store.put_message(Message("T", f"m{i}".encode(), 0, tags="a")) for i in range(3)]
    for i, result in enumerate(results):
        found = store.look_message_by_offset(result.commit_log_offset)
        assert found is not None and found.body == f"m{i}".encode() and found.queue_offset == i
    assert store.look_message_by_offset(results[1].commit_log_offset + 1) is None
    assert store.look_message_by_offset(-1) is None
    assert store.look_message_by_offset(store.get_commit_log_max_offset()) is None
    assert store.look_message_by_offset(10**15) is None


def test_a_consume_queue_takes_disk_in_proportion_to_its_units(make_store, tmp_path: Path) -> None:
    """Issue 41: a queue with one message took its whole 6,000,000-byte segment of disk. It now grows by
    CQ_ALLOCATE_STEP bytes ahead of its units; its file keeps the segment's length, and a store reopened reads it."""
    units = 300_000
    store = make_store(consume_queue_units_per_segment=units)
    store.create_topic("Small", 1)
    for i in range(3):
        store.put_message(Message("Small", b"x", 0, keys=f"k{i}"))
    store.close()
    [segment] = (tmp_path / "s" / "consumequeue" / "Small" / "0").iterdir()
    assert segment.stat().st_size == units * CQ_STORE_UNIT_SIZE
    assert segment.stat().st_blocks * 512 <= 2 * CQ_ALLOCATE_STEP
    reopened = make_store(consume_queue_units_per_segment=units)
    assert reopened.get_max_offset_in_queue("Small", 0) == 3
