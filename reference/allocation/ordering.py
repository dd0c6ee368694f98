"""Java's order, which every member of a consumer group must share.

RocketMQ sorts ``mq_all`` with ``MessageQueue.compareTo`` and ``cid_all`` with ``String.compareTo``
before calling a strategy. Java compares strings by UTF-16 code units; Python compares code points.
The two differ only when a supplementary character (above U+FFFF, encoded as a surrogate pair
0xD800-0xDFFF) meets a BMP character above U+D7FF: Java puts the supplementary character first (its
lead surrogate is smaller than, say, U+FF21), Python puts it last. A Python consumer sorting with
``sorted()`` would see a different order from its Java neighbours and take the wrong share, so
everything here sorts with :func:`java_string_key`.
"""

from __future__ import annotations

from collections.abc import Iterable

#: UTF-16 big-endian: comparing the bytes compares the code units, most significant byte first.
#: ``surrogatepass`` keeps lone surrogates (legal in a Java string, and in JSON) instead of failing.
_UTF16 = "utf-16-be"


def java_string_key(s: str) -> bytes:
    """Sort key that orders strings as Java's ``String.compareTo`` does (UTF-16 code units)."""
    return s.encode(_UTF16, "surrogatepass")


def sort_cid_all(cid_all: Iterable[str]) -> list[str]:
    """``Collections.sort(cidAll)`` as the rebalance does it."""
    return sorted(cid_all, key=java_string_key)
