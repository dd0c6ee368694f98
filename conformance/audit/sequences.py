"""TRACE-1's ``seq`` rule: ``seq`` strictly increases within (``run``, ``source``), so no two rows of one
recorder share a ``seq``. Rows that do are bad rows (reported with the others, left out of every
derivation): which of them is the original cannot be told, and a derivation that picked one would
judge events in an order the recorder never wrote.

Finding them takes one aggregation over the rows of the recorders that have no certificate of
uniqueness (:mod:`conformance.audit.seqcert`; usually none, and then no job at all), keyed by a hash of
(run, source) and the ``seq`` itself (narrow and numeric, so it runs in Spark's generated hash
aggregation). Only the repeated keys
come back to the driver, as 64-bit hashes of (run, source, seq), and filter the rows as a hash-set
literal (a row outside the set that shares a key's hash has a probability near 1e-19 per key and row).
A trace that repeats more keys than :data:`MAX_DUPLICATE_KEYS` was not written by a v1 recorder at all
(a file loaded twice, a recorder restarting its counter) and is refused with that message (exit 2)
rather than audited into noise.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from conformance.audit.inputs import UnreadableTrace

#: Repeated (run, source, seq) keys above which the trace is refused as unreadable.
MAX_DUPLICATE_KEYS = 100_000
#: The bad-row reason of a row whose seq repeats.
REASON = "seq repeats within (run, source): seq must strictly increase"


def row_key() -> Column:
    """A row's (run, source, seq) as one 64-bit hash."""
    return F.xxhash64("run", "source", "seq")


def duplicate_keys(rows: DataFrame) -> DataFrame:
    """The row keys (:func:`row_key`, column ``key``) shared by more than one row, at most one beyond the
    cap: a frame for the catalog's single collect, checked there by :func:`checked_keys`."""
    keyed = rows.filter(F.col("run").isNotNull() & F.col("source").isNotNull() & F.col("seq").isNotNull())
    repeated = keyed.groupBy(F.xxhash64("run", "source").alias("recorder"), "seq").agg(
        F.count("*").alias("n"), F.min(row_key()).alias("key")).filter(F.col("n") > 1)
    return repeated.select("key").limit(MAX_DUPLICATE_KEYS + 1)


def checked_keys(keys: list[int]) -> list[int]:
    """``keys`` sorted; UnreadableTrace beyond the cap."""
    if len(keys) > MAX_DUPLICATE_KEYS:
        raise UnreadableTrace(f"seq repeats within (run, source) on more than {MAX_DUPLICATE_KEYS} keys: "
                              "not a schema-v1 trace (each recorder's seq must strictly increase)")
    return sorted(keys)


def repeated(keys: list[int]) -> Column:
    """True for a row whose (run, source, seq) is one of ``keys``."""
    return row_key().isin(*keys) if keys else F.lit(False)
