"""The order in which Java's ``HashMap<String, …>`` iterates its keys.

RocketMQ collects the resources a request needs in a HashMap and refuses it at the first one denied while iterating
it; to name the same resource in the refusal, the reference iterates in the same order. HashMap (JDK 8+) keeps a
table of a power-of-two size (16, doubled while more than 0.75 of it is used); a key goes to the bucket of its
spread ``String.hashCode``; iteration walks the buckets in order and each bucket in insertion order (a resize keeps
that relative order, and re-putting a key keeps its place).
"""

from __future__ import annotations

from collections.abc import Iterable

#: HashMap's initial capacity and load factor.
INITIAL_CAPACITY = 16
LOAD_FACTOR = 0.75


def string_hash(s: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units) as a signed 32-bit int."""
    h = 0
    for unit in s.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def _bucket(key: str, capacity: int) -> int:
    h = string_hash(key) & 0xFFFFFFFF
    return (h ^ (h >> 16)) & (capacity - 1)


def hashmap_order(keys: Iterable[str]) -> list[str]:
    """``keys`` (distinct, in insertion order) in the order a HashMap they were put into iterates them."""
    ordered = list(dict.fromkeys(keys))
    capacity = INITIAL_CAPACITY
    while len(ordered) > capacity * LOAD_FACTOR:
        capacity *= 2
    # sorted() is stable: within a bucket, insertion order stays.
    return sorted(ordered, key=lambda k: _bucket(k, capacity))
