"""OFFSET and RETAIN requirements through the Target interface: each correction row on its own, and
what retention may and may not delete. The expected values come from the spec sentences, not from
the reference's code."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.suite.support import FILE_RESERVED_MS, HOUR_MS, aged_queue, fill, fill_three_segments, segment_bytes
from conformance.targets import PullReply, StoreLayoutTarget, Target

pytestmark = pytest.mark.needs("pull")


def pull(target: Target, offset: int, **kw: Any) -> PullReply:
    return target.start_pull("G", "OT", 0, offset, **kw).result()


@pytest.mark.req("OFFSET-1")
def test_empty_queue_answers_zero(target: Target) -> None:
    target.create_topic("OT", 1)
    for offset in (0, 1, 7, 1_000_000):
        r = pull(target, offset)
        assert (r.status, r.next_begin_offset) == ("NO_MESSAGE_IN_QUEUE", 0), f"pull at {offset} of an empty queue"


@pytest.mark.req("OFFSET-3")
def test_overflow_one_keeps_the_offset(target: Target) -> None:
    target.create_topic("OT", 1)
    fill(target, "OT", 10)
    r = pull(target, 10)
    assert (r.status, r.next_begin_offset) == ("OFFSET_OVERFLOW_ONE", 10)


@pytest.mark.req("OFFSET-4")
def test_overflow_badly_with_min_zero(target: Target) -> None:
    target.create_topic("OT", 1)
    fill(target, "OT", 10)
    for offset in (11, 12, 500):
        r = pull(target, offset)
        assert r.status == "OFFSET_OVERFLOW_BADLY", f"pull at {offset} of [0, 10)"
        assert r.next_begin_offset in (0, 10), f"min is 0: back to 0 (seed) or to the max 10 (4.9.4+) from {offset}"
    # One broker, one rule: the answer does not depend on how far beyond the max the pull was.
    assert len({pull(target, offset).next_begin_offset for offset in (11, 500)}) == 1


@pytest.mark.req("OFFSET-6", "OFFSET-9")
def test_found_batch_stops_at_max_nums(target: Target) -> None:
    target.create_topic("OT", 1)
    fill(target, "OT", 10)
    r = pull(target, 4, max_nums=3)
    assert r.status == "FOUND" and [m.queue_offset for m in r.messages] == [4, 5, 6] and r.next_begin_offset == 7


@pytest.mark.req("OFFSET-2", "OFFSET-5", "RETAIN-1", "RETAIN-7")
@pytest.mark.needs("retention_control", "clock_control", "store_layout")
def test_corrections_once_the_min_offset_rose(target: StoreLayoutTarget) -> None:
    target.create_topic("OT", 1)
    old, lo, hi = aged_queue(target, "OT")
    assert 0 < lo <= old and hi == old + 50, f"expired segments deleted and min raised, got [{lo}, {hi})"
    for offset in (0, lo // 2, lo - 1):
        r = pull(target, offset)
        assert (r.status, r.next_begin_offset) == ("OFFSET_TOO_SMALL", lo), f"pull at {offset} below min {lo}"
    for offset in (hi + 1, hi + 1_000):
        r = pull(target, offset)
        assert (r.status, r.next_begin_offset) == ("OFFSET_OVERFLOW_BADLY", hi), f"min > 0: to max from {offset}"
    r = pull(target, lo)
    assert r.status == "FOUND" and r.messages[0].queue_offset == lo


@pytest.mark.req("RETAIN-1", "RETAIN-5")
@pytest.mark.needs("retention_control", "clock_control", "store_layout")
def test_young_messages_and_the_written_segment_survive(target: StoreLayoutTarget) -> None:
    target.create_topic("OT", 1)
    n = len(fill_three_segments(target, "OT", 0, segment_bytes(target)))
    target.advance(FILE_RESERVED_MS - HOUR_MS)
    target.run_retention()
    assert target.min_max("OT", 0) == (0, n), "nothing is deleted before fileReservedTime"
    r = pull(target, 0)
    assert r.status == "FOUND" and r.messages[0].queue_offset == 0
    target.advance(2 * HOUR_MS)
    target.run_retention()
    lo, hi = target.min_max("OT", 0)
    assert hi == n and lo < hi, "the segment being written is never deleted"
    r = pull(target, hi - 1)
    assert r.status == "FOUND" and r.messages[0].queue_offset == hi - 1


@pytest.mark.req("RETAIN-12")
@pytest.mark.needs("retention_control", "clock_control", "store_layout")
def test_a_later_clean_run_never_lowers_the_min_offset(target: StoreLayoutTarget) -> None:
    """Split from the test above: 'never falls' is upstream's (RETAIN-12), not seed 002's."""
    target.create_topic("OT", 1)
    fill_three_segments(target, "OT", 0, segment_bytes(target))
    target.advance(FILE_RESERVED_MS + HOUR_MS)
    target.run_retention()
    lo = target.min_max("OT", 0)[0]
    target.run_retention()
    assert target.min_max("OT", 0)[0] >= lo, "the min offset never falls"
