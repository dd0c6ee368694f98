"""ALLOC requirements through the Target interface: the two strategies every RocketMQ client uses by
name, checked against formulas typed from the spec sentences over a grid of group sizes. Each
allocation's balance is recorded for the report."""

from __future__ import annotations

import pytest

from conformance.suite.support import RecordProperty
from conformance.targets import AllocationTarget

pytestmark = pytest.mark.needs("allocation")
#: (queues, consumers) pairs: fewer, equal and more queues than consumers, with and without remainder.
GRID = [(q, n) for q in (1, 3, 4, 6, 8, 13) for n in (1, 2, 3, 4, 5, 7)]


def queues(q: int) -> list[tuple[str, str, int]]:
    return [("AT", "broker-a", i) for i in range(q)]


def cids(n: int) -> list[str]:
    return [f"10.0.0.{i}@{i}" for i in range(n)]


def shares(target: AllocationTarget, strategy: str, q: int, n: int, record_property: RecordProperty) -> list[list[int]]:
    mq_all, cid_all = queues(q), cids(n)
    out = [[qid for _, _, qid in target.allocate(strategy, "G", cid, mq_all, cid_all)] for cid in cid_all]
    record_property("alloc.balance", [{"strategy": strategy, "queues": q, "consumers": n,
                                       "shares": [len(s) for s in out]}])
    return out


def partition_and_balance(got: list[list[int]], q: int) -> None:
    flat = sorted(x for s in got for x in s)
    assert flat == list(range(q)), f"ALLOC-10: shares must partition the {q} queues, got {got}"
    sizes = [len(s) for s in got]
    assert max(sizes) - min(sizes) <= 1, f"ALLOC-11: shares differ by more than one queue: {got}"


@pytest.mark.req("ALLOC-2", "ALLOC-10", "ALLOC-11")
def test_averagely_contiguous_blocks_remainder_first(target: AllocationTarget, record_property: RecordProperty) -> None:
    for q, n in GRID:
        got = shares(target, "averagely", q, n, record_property)
        partition_and_balance(got, q)
        start = 0
        for i in range(n):
            size = q // n + (1 if i < q % n else 0) if q > n else (1 if i < q else 0)
            assert got[i] == list(range(start, start + size)), f"ALLOC-2: {q} queues, {n} consumers, consumer {i}"
            start += size


@pytest.mark.req("ALLOC-3", "ALLOC-10", "ALLOC-11")
def test_by_circle_deals_round_robin(target: AllocationTarget, record_property: RecordProperty) -> None:
    for q, n in GRID:
        got = shares(target, "by_circle", q, n, record_property)
        partition_and_balance(got, q)
        for i in range(n):
            assert got[i] == [p for p in range(q) if p % n == i], f"ALLOC-3: {q} queues, {n} consumers, consumer {i}"
