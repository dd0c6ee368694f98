"""A cheap certificate that a recorder's ``seq`` values do not repeat, so that the exact check of
TRACE-1's seq rule (:func:`conformance.audit.sequences.duplicate_keys`, an aggregation keyed by every
row: at 10M rows the catalog's most expensive part) runs only for the recorders without one.

Per (run, source) the catalog's aggregation already groups by the recorder; it adds the count of seqs,
their min and max, and the exact sum of their 64-bit hashes (Spark's ``xxhash64``), as two sums of 64-bit
integers, one of the hashes' signed high halves and one of their unsigned low halves, which the driver
adds up exactly (:data:`HALF_SUMS`). A recorder whose seqs are exactly the integers min..max (the usual case: a counter
from 0 or 1 with nothing filtered out) has count = max - min + 1 and a hash sum equal to that of the
range, computed here on the driver with the same hash. Conversely, equal counts and sums with some seq
repeated (so, count being the range's size, some other seq missing) need the hashes of the repeated
values to add up exactly to those of the missing ones: with a 64-bit hash that behaves as random, a
chance of about 2^-64 per recorder. A recorder with a gap (a filtered trace, a counter that skips) has no
certificate and gets the exact check, so a certificate can hide nothing beyond that chance; it can never
create a finding.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pyspark.sql import Column
from pyspark.sql import functions as F

#: Spark's ``xxhash64`` seed and XXH64's primes (Spark's XXH64.hashLong, for one 8-byte long).
SEED = 42
_P1, _P2, _P3, _P4, _P5 = (np.uint64(0x9E3779B185EBCA87), np.uint64(0xC2B2AE3D27D4EB4F),
                           np.uint64(0x165667B19E3779F9), np.uint64(0x85EBCA77C2B2AE63),
                           np.uint64(0x27D4EB2F165667C5))
#: Values hashed per numpy step (keeps the driver's temporaries near 30 MiB whatever the recorder's size).
CHUNK = 1_000_000


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def xxhash64_longs(values: np.ndarray) -> np.ndarray:
    """Spark's ``xxhash64(v)`` of each int64 in ``values`` (as int64), vectorised."""
    with np.errstate(over="ignore"):
        x = values.astype(np.int64).view(np.uint64)
        h = np.uint64((SEED + int(_P5) + 8) % 2**64)
        h = h ^ (_rotl(x * _P2, 31) * _P1)
        h = _rotl(h, 27) * _P1 + _P4
        h ^= h >> np.uint64(33)
        h *= _P2
        h ^= h >> np.uint64(29)
        h *= _P3
        h ^= h >> np.uint64(32)
    return h.view(np.int64)


def range_hash_sum(lo: int, hi: int) -> int:
    """The exact sum (a Python int) of ``xxhash64(v)`` for v in lo..hi."""
    total = 0
    for start in range(lo, hi + 1, CHUNK):
        h = xxhash64_longs(np.arange(start, min(hi, start + CHUNK - 1) + 1, dtype=np.int64))
        # Exact: split each signed 64-bit value into a signed high and an unsigned low 32-bit half.
        high = (h >> np.int64(32)).sum(dtype=np.int64)
        low = (h & np.int64(0xFFFFFFFF)).sum(dtype=np.int64)
        total += int(high) * 2**32 + int(low)
    return total


#: Why the hash sum is two sums of halves and not one sum of decimals: a ``decimal(38,0)`` sum is Java
#: BigDecimal arithmetic for every row, which made the catalog's aggregation (every row of the trace, the load
#: phase's one job) half again as long: 3.05 s against 2.0 s at 10M events, warm, the same groups
#: (docs/audit.md). Each half is below 2^32 in magnitude, so its sum is exact in a 64-bit integer up to 2^31 rows
#: per group of the catalog; beyond that Spark's ANSI arithmetic fails the audit (exit 2) rather than wrap.
HALF_SUMS = ("seq_hash_high", "seq_hash_low")
_LOW_HALF = 0xFFFFFFFF


def aggregates() -> list[Column]:
    """What the catalog's per-recorder aggregation adds (columns seq_n, seq_min, seq_max and :data:`HALF_SUMS`)."""
    seq = F.col("seq")
    hashed = F.xxhash64(seq)
    high, low = HALF_SUMS
    return [F.count(seq).alias("seq_n"), F.min(seq).alias("seq_min"), F.max(seq).alias("seq_max"),
            F.sum(F.shiftright(hashed, 32)).alias(high), F.sum(hashed.bitwiseAND(F.lit(_LOW_HALF))).alias(low)]


def hash_sum(high: int | None, low: int | None) -> int:
    """The exact sum of a group's seq hashes from its two half sums (:func:`aggregates`)."""
    return (high or 0) * 2**32 + (low or 0)


@dataclass
class SeqSummary:
    """One recorder's aggregates, merged over the catalog's finer groups."""

    n: int = 0
    lo: int | None = None
    hi: int | None = None
    hash_sum: int = 0

    def add(self, n: int, lo: int | None, hi: int | None, hash_sum: object) -> None:
        if not n:
            return
        self.n += n
        self.lo = lo if self.lo is None else min(self.lo, lo)
        self.hi = hi if self.hi is None else max(self.hi, hi)
        self.hash_sum += int(hash_sum)

    def certified(self) -> bool:
        """True when the seqs are exactly lo..hi, each once (up to the 2^-64 chance above)."""
        if self.n == 0:
            return True
        if self.n != self.hi - self.lo + 1:
            return False
        return self.hash_sum == range_hash_sum(self.lo, self.hi)
