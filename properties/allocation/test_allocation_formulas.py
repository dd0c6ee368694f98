"""AllocateMessageQueueAveragely and AveragelyByCircle against formulas typed from ALLOC-2 and
ALLOC-3 (independent of the reference's code), over generated group sizes and consumer orders."""

from __future__ import annotations

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from reference.allocation.averagely import AllocateMessageQueueAveragely
from reference.allocation.by_circle import AllocateMessageQueueAveragelyByCircle
from reference.allocation.message_queue import MessageQueue

groups = st.tuples(st.integers(1, 40), st.integers(1, 12))


def _shares(cls: type, q: int, n: int) -> list[list[int]]:
    mq_all = [MessageQueue("T", "b", i) for i in range(q)]
    cid_all = [f"c{i:02d}" for i in range(n)]
    return [[mq.queue_id for mq in cls().allocate("G", cid, mq_all, cid_all)] for cid in cid_all]


def averagely_property(cls: type):  # type: ignore[no-untyped-def]
    @given(groups)
    def prop(group: tuple[int, int]) -> None:
        q, n = group
        got = _shares(cls, q, n)
        note(f"{q} queues, {n} consumers: {got}")
        start = 0
        for i in range(n):
            size = (q // n + (1 if i < q % n else 0)) if q > n else (1 if i < q else 0)
            assert got[i] == list(range(start, start + size)), f"ALLOC-2: consumer {i}"
            start += size

    return prop


def by_circle_property(cls: type):  # type: ignore[no-untyped-def]
    @given(groups)
    def prop(group: tuple[int, int]) -> None:
        q, n = group
        got = _shares(cls, q, n)
        note(f"{q} queues, {n} consumers: {got}")
        for i in range(n):
            assert got[i] == [p for p in range(q) if p % n == i], f"ALLOC-3: consumer {i}"

    return prop


@pytest.mark.req("ALLOC-2")
def test_averagely_formula() -> None:
    averagely_property(AllocateMessageQueueAveragely)()


@pytest.mark.req("ALLOC-3")
def test_by_circle_formula() -> None:
    by_circle_property(AllocateMessageQueueAveragelyByCircle)()
