"""ProcessQueue: the cache of one queue and its commit point (seed 001 §5 removeMessage)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.client.process_queue import ProcessQueue
from reference.store.message import StoredMessage


def msg(offset: int, body: bytes = b"abc") -> StoredMessage:
    return StoredMessage("T", 0, offset, offset * 100, 100, body, None, None, {}, 0, 0, 0, f"id{offset}", f"u{offset}")


@pytest.mark.req("CONSUME-8")
def test_commit_point_is_the_smallest_offset_still_cached() -> None:
    pq = ProcessQueue(0, 120_000)
    assert pq.remove_message([msg(0)]) == -1, "nothing cached: nothing to commit"
    assert pq.put_message([msg(o) for o in range(5, 10)]) is True
    assert (pq.msg_count, pq.msg_size) == (5, 15)
    assert pq.remove_message([msg(7)]) == 5
    assert pq.remove_message([msg(5), msg(6)]) == 8
    assert pq.remove_message([msg(9)]) == 8
    assert pq.remove_message([msg(8)]) == 10, "empty: one past the largest cached offset"
    assert (pq.msg_count, pq.msg_size) == (0, 0)
    assert pq.put_message([msg(7)]) is True and pq.first_offset() == 7
    assert pq.put_message([msg(7)]) is False, "already cached: nothing new to dispatch"


@pytest.mark.req("CONSUME-8")
@given(
    offsets=st.lists(st.integers(0, 200), min_size=1, max_size=60, unique=True),
    data=st.data(),
)
def test_commit_point_never_passes_a_cached_offset(offsets: list[int], data: st.DataObject) -> None:
    pq = ProcessQueue(0, 120_000)
    pq.put_message([msg(o) for o in sorted(offsets)])
    remaining = set(offsets)
    order = data.draw(st.permutations(sorted(offsets)))
    for offset in order:
        point = pq.remove_message([msg(offset)])
        remaining.discard(offset)
        assert point == (min(remaining) if remaining else max(offsets) + 1)
        assert pq.msg_count == len(remaining)


def test_out_of_order_insertion_keeps_the_smallest_first() -> None:
    pq = ProcessQueue(0, 120_000)
    pq.put_message([msg(10), msg(11)])
    pq.put_message([msg(3)])
    assert pq.first_offset() == 3
    assert pq.remove_message([msg(3)]) == 10


@pytest.mark.req("REBAL-9")
def test_pull_expired_after_the_idle_time() -> None:
    pq = ProcessQueue(1_000, 120_000)
    assert not pq.is_pull_expired(121_000)
    assert pq.is_pull_expired(121_001)
    pq.last_pull_timestamp = 100_000
    assert not pq.is_pull_expired(121_001)
    assert ProcessQueue(0, 120_000).first_offset() is None
