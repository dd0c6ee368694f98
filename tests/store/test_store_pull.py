"""getMessage: the offset checks, the scan, tag filtering and batch limits (seed 002 §1)."""

from __future__ import annotations

import pytest

from reference.rules.filter import SubscriptionData
from reference.rules.status import CORRECTION_TABLE, GetMessageStatus, check_offset, overflow_to_max
from reference.store.message import Message
from reference.store.store import GetMessageResult, MessageStore

HOUR_MS = 3_600_000
#: A 17-byte body in topic "T" without tags makes a 100-byte record; 10 fit a 1012-byte segment
#: (each record must leave 12 bytes for the end-of-segment marker).
RECORD_BODY = b"x" * 17
SEGMENT_OF_10 = 1012


def _fill(store: MessageStore, n: int, tags=lambda i: None, queue: int = 0) -> None:
    for i in range(n):
        store.put_message(Message("T", RECORD_BODY, queue, tags=tags(i)))


def _pull(store: MessageStore, offset: int, n: int = 32, expression: str | None = None) -> GetMessageResult:
    return store.get_message("g", "T", 0, offset, n, SubscriptionData.parse("T", expression))


def _offsets(result: GetMessageResult) -> list[int]:
    return [m.queue_offset for m in result.messages]


def _store_with_expired_half(make_store, clock, units_per_segment: int = 10) -> MessageStore:
    """Queue T/0 with offsets 0..199 in 100-byte records, 10 per commit-log segment; 0..99 are
    73 hours old, 100..199 new, so retention deletes exactly the segments holding 0..99."""
    store = make_store(
        commit_log_segment_bytes=SEGMENT_OF_10, consume_queue_units_per_segment=units_per_segment
    )
    store.create_topic("T", 1)
    store.create_topic("Empty", 1)
    _fill(store, 100)
    clock.advance(73 * HOUR_MS)
    _fill(store, 100)
    store.request_manual_delete()
    return store


@pytest.mark.req("OFFSET-1", "OFFSET-2", "OFFSET-3", "OFFSET-5", "OFFSET-6", "RETAIN-12")
def test_queue_holding_100_to_200_after_retention(make_store, clock) -> None:
    # 50 units per index segment, so that a batch of 32 from 100 or 150 stays inside one.
    store = _store_with_expired_half(make_store, clock, units_per_segment=50)
    store.run_retention()
    assert store.get_commit_log_min_offset() == 10 * SEGMENT_OF_10
    assert (store.get_min_offset_in_queue("T", 0), store.get_max_offset_in_queue("T", 0)) == (100, 200)
    expected = {
        0: (GetMessageStatus.OFFSET_TOO_SMALL, 100),
        100: (GetMessageStatus.FOUND, 132),
        150: (GetMessageStatus.FOUND, 182),
        200: (GetMessageStatus.OFFSET_OVERFLOW_ONE, 200),
        300: (GetMessageStatus.OFFSET_OVERFLOW_BADLY, 200),
    }
    for offset, (status, next_offset) in expected.items():
        result = _pull(store, offset)
        assert (result.status, result.next_begin_offset) == (status, next_offset), offset
        assert (result.min_offset, result.max_offset) == (100, 200)
        if status is GetMessageStatus.FOUND:
            assert _offsets(result) == list(range(offset, offset + 32))
        else:
            assert result.messages == []
    empty = store.get_message("g", "Empty", 0, 0, 32, None)
    assert (empty.status, empty.next_begin_offset) == (GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0)


@pytest.mark.req("OFFSET-1")
def test_empty_queue_answers_no_message_whatever_the_offset(make_store) -> None:
    store = make_store()
    store.create_topic("T", 1)
    for offset in (0, 1, 99):
        result = _pull(store, offset)
        assert (result.status, result.next_begin_offset, result.min_offset, result.max_offset) == (
            GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0, 0, 0
        )


@pytest.mark.req("OFFSET-4")
def test_overflow_badly_with_min_zero_goes_back_to_zero(make_store) -> None:
    store = make_store()
    store.create_topic("T", 1)
    _fill(store, 10)
    result = _pull(store, 15)
    assert (result.status, result.next_begin_offset) == (GetMessageStatus.OFFSET_OVERFLOW_BADLY, 0)
    one = _pull(store, 10)
    assert (one.status, one.next_begin_offset) == (GetMessageStatus.OFFSET_OVERFLOW_ONE, 10)


@pytest.mark.req("OFFSET-4")
def test_overflow_badly_goes_to_the_max_as_rocketmq_4_9_4_does_when_configured(make_store) -> None:
    """offset_overflow_to_max (how the reference runs against RocketMQ 4.9.4+): past the max, to the max even
    with min 0; every other row of the table is unchanged."""
    store = make_store(offset_overflow_to_max=True)
    store.create_topic("T", 1)
    _fill(store, 10)
    result = _pull(store, 15)
    assert (result.status, result.next_begin_offset) == (GetMessageStatus.OFFSET_OVERFLOW_BADLY, 10)
    table = overflow_to_max(CORRECTION_TABLE)
    for args in ((5, 0, 0), (3, 10, 20), (20, 10, 20), (25, 10, 20), (15, 10, 20)):
        assert check_offset(*args, table) == check_offset(*args), args
    assert check_offset(25, 0, 20, table) == (GetMessageStatus.OFFSET_OVERFLOW_BADLY, 20)


@pytest.mark.req("OFFSET-1", "OFFSET-2", "OFFSET-3", "OFFSET-4", "OFFSET-5")
def test_correction_table_rows_agree_with_check_offset() -> None:
    cases = {
        (5, 0, 0): (GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0),
        (3, 10, 20): (GetMessageStatus.OFFSET_TOO_SMALL, 10),
        (20, 10, 20): (GetMessageStatus.OFFSET_OVERFLOW_ONE, 20),
        (25, 0, 20): (GetMessageStatus.OFFSET_OVERFLOW_BADLY, 0),
        (25, 10, 20): (GetMessageStatus.OFFSET_OVERFLOW_BADLY, 20),
        (15, 10, 20): (None, 15),
    }
    for args, expected in cases.items():
        assert check_offset(*args) == expected, args
    assert [row.status for row in CORRECTION_TABLE] == [
        GetMessageStatus.NO_MESSAGE_IN_QUEUE, GetMessageStatus.OFFSET_TOO_SMALL,
        GetMessageStatus.OFFSET_OVERFLOW_ONE, GetMessageStatus.OFFSET_OVERFLOW_BADLY,
        GetMessageStatus.OFFSET_OVERFLOW_BADLY,
    ]
    assert all(row.condition and row.next_begin_offset for row in CORRECTION_TABLE)


@pytest.mark.req("OFFSET-6")
def test_found_advances_by_units_scanned_not_messages_returned(make_store) -> None:
    store = make_store(consume_queue_units_per_segment=100)
    store.create_topic("T", 1)
    _fill(store, 20, tags=lambda i: "b" if i % 2 else "a")
    result = _pull(store, 0, n=3, expression="b")
    # Units 0..5 are scanned (a b a b a b); unit 6 finds the batch full and is not counted.
    assert (result.status, _offsets(result)) == (GetMessageStatus.FOUND, [1, 3, 5])
    assert result.next_begin_offset == 6
    assert all(m.tags == "b" for m in result.messages)


@pytest.mark.req("OFFSET-6")
def test_no_matched_message_advances_past_what_was_scanned(make_store) -> None:
    store = make_store(consume_queue_units_per_segment=10)
    store.create_topic("T", 1)
    _fill(store, 25, tags=lambda i: "a")
    result = _pull(store, 3, expression="zzz")
    # The scan stops at the end of the consume-queue segment holding offset 3 ([0, 10)).
    assert (result.status, result.next_begin_offset, result.messages) == (
        GetMessageStatus.NO_MATCHED_MESSAGE, 10, []
    )
    mixed = _pull(store, 12, expression="a||zzz")
    assert (mixed.status, _offsets(mixed)) == (GetMessageStatus.FOUND, list(range(12, 20)))
    assert mixed.next_begin_offset == 20


@pytest.mark.req("OFFSET-7.removed")
def test_message_was_removing_between_commit_log_and_index_cleanup(make_store, clock) -> None:
    store = _store_with_expired_half(make_store, clock, units_per_segment=30)
    assert store.clean_commit_log() == 10  # phase 1 only: the index still points at deleted data
    assert store.get_min_offset_in_queue("T", 0) == 0
    removing = _pull(store, 30)
    # Unit 30 is gone; 31..39 lie in the same deleted commit-log segment and are skipped (but
    # counted); 40..59 are in the next deleted segments and are gone too, up to the index segment end.
    assert (removing.status, removing.next_begin_offset, removing.messages) == (
        GetMessageStatus.MESSAGE_WAS_REMOVING, 60, []
    )
    spanning = _pull(store, 95, n=8)
    # 95..99 are gone, 100.. are still there: the batch is FOUND and starts at 100.
    assert (spanning.status, _offsets(spanning), spanning.next_begin_offset) == (
        GetMessageStatus.FOUND, list(range(100, 108)), 108
    )


@pytest.mark.req("OFFSET-8")
def test_offset_found_null_when_the_index_segment_is_gone_but_min_not_corrected(make_store, clock) -> None:
    store = _store_with_expired_half(make_store, clock)
    store.clean_commit_log()
    assert store.clean_consume_queues() == 10
    assert store.get_min_offset_in_queue("T", 0) == 0  # phase 3 has not run
    result = _pull(store, 25)
    assert (result.status, result.next_begin_offset) == (GetMessageStatus.OFFSET_FOUND_NULL, 30)
    store.correct_min_offsets()
    after = _pull(store, 25)
    assert (after.status, after.next_begin_offset) == (GetMessageStatus.OFFSET_TOO_SMALL, 100)


@pytest.mark.req("OFFSET-9")
def test_batch_full_by_count(make_store) -> None:
    store = make_store(consume_queue_units_per_segment=100, max_transfer_count_on_message_in_memory=4)
    store.create_topic("T", 1)
    _fill(store, 50)
    five = _pull(store, 2, n=3)
    assert (_offsets(five), five.next_begin_offset) == ([2, 3, 4], 5)
    capped = _pull(store, 10, n=32)  # the in-memory count limit (4) is below maxMsgNums
    assert (_offsets(capped), capped.next_begin_offset) == ([10, 11, 12, 13], 14)


@pytest.mark.req("OFFSET-10.in-memory")
def test_batch_full_by_bytes_in_memory(make_store) -> None:
    store = make_store(consume_queue_units_per_segment=100, max_transfer_bytes_on_message_in_memory=350)
    store.create_topic("T", 1)
    _fill(store, 50)
    result = _pull(store, 0)  # 100-byte records: a 4th would make 400 > 350
    assert (_offsets(result), result.next_begin_offset) == ([0, 1, 2], 3)
    tiny = make_store("tiny", max_transfer_bytes_on_message_in_memory=50)
    tiny.create_topic("T", 1)
    _fill(tiny, 5)
    first = _pull(tiny, 0)  # the first message is always taken, even above the limit
    assert (_offsets(first), first.next_begin_offset) == ([0], 1)


@pytest.mark.req("OFFSET-10.in-disk", "OFFSET-11", "QOFF-4")
def test_in_disk_data_uses_the_in_disk_limits(make_store) -> None:
    # 1000 bytes of "memory" at 40 %: a message more than 400 bytes behind the log end is in disk.
    store = make_store(
        consume_queue_units_per_segment=100, total_physical_memory_bytes=1000,
        max_transfer_count_on_message_in_disk=2, max_transfer_bytes_on_message_in_disk=10_000,
    )
    store.create_topic("T", 1)
    _fill(store, 40)
    in_disk = _pull(store, 0)
    assert (_offsets(in_disk), in_disk.next_begin_offset) == ([0, 1], 2)
    near_end = _pull(store, 35)  # 36..39 start within 400 bytes of the end: in memory
    assert _offsets(near_end) == [35, 36, 37, 38, 39]
    assert store.check_in_disk_by_consume_offset("T", 0, 0)
    assert not store.check_in_disk_by_consume_offset("T", 0, 39)
    assert not store.check_in_disk_by_consume_offset("T", 0, 40)  # no unit there
    assert not store.check_in_disk_by_consume_offset("T", 1, 0)
    by_bytes = make_store(
        "bytes", total_physical_memory_bytes=1000, max_transfer_bytes_on_message_in_disk=250
    )
    by_bytes.create_topic("T", 1)
    _fill(by_bytes, 40)
    assert _offsets(_pull(by_bytes, 0)) == [0, 1]


@pytest.mark.req("OFFSET-12")
def test_scan_is_bounded_by_16000_bytes_of_units(make_store) -> None:
    store = make_store(consume_queue_units_per_segment=300_000, commit_log_segment_bytes=1 << 20)
    store.create_topic("T", 1)
    _fill(store, 1500, tags=lambda i: "a")
    _fill(store, 5, tags=lambda i: "b")
    result = _pull(store, 0, expression="b")
    assert (result.status, result.next_begin_offset) == (GetMessageStatus.NO_MATCHED_MESSAGE, 800)
    wide = _pull(store, 0, n=1000, expression="b")  # max(16000, 1000 * 20) bytes = 1000 units
    assert (wide.status, wide.next_begin_offset) == (GetMessageStatus.NO_MATCHED_MESSAGE, 1000)
    found = _pull(store, 1000, expression="b")
    assert (found.status, _offsets(found), found.next_begin_offset) == (
        GetMessageStatus.FOUND, list(range(1500, 1505)), 1505
    )


@pytest.mark.req("OFFSET-12")
def test_scan_bound_counts_bytes_not_units(make_store) -> None:
    store = make_store(consume_queue_units_per_segment=100, max_filter_scan_bytes=30)
    store.create_topic("T", 1)
    _fill(store, 20, tags=lambda i: "a")
    result = _pull(store, 0, n=1, expression="b")  # counter 0 and 20 are below 30: two units
    assert (result.status, result.next_begin_offset) == (GetMessageStatus.NO_MATCHED_MESSAGE, 2)


def test_offset_by_timestamp(make_store, clock) -> None:
    store = make_store()
    store.create_topic("T", 1)
    start = clock.now_ms()
    for _ in range(5):
        _fill(store, 2)
        clock.advance(1000)
    assert store.get_offset_by_timestamp("T", 0, start) == 0
    assert store.get_offset_by_timestamp("T", 0, start + 1) == 2
    assert store.get_offset_by_timestamp("T", 0, start + 4000) == 8
    assert store.get_offset_by_timestamp("T", 0, start + 9000) == 10
    assert store.get_offset_by_timestamp("T", 1, start) == 0


def test_tags_codes_lists_present_units(make_store) -> None:
    store = make_store()
    store.create_topic("T", 1)
    _fill(store, 25, tags=lambda i: f"t{i % 3}")
    codes = list(store.tags_codes("T", 0, 8, 12))
    expected = SubscriptionData.parse("T", "t0||t1||t2")
    assert [o for o, _ in codes] == [8, 9, 10, 11]
    assert all(code in expected.codes for _, code in codes)
    assert [o for o, _ in store.tags_codes("T", 0, 20, 99)] == [20, 21, 22, 23, 24]
    assert list(store.tags_codes("T", 1, 0, 5)) == []
