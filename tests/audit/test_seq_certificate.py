"""The seq certificate (conformance.audit.seqcert): the driver's hash is Spark's, a certificate holds
exactly for a repeat-free contiguous range, and a repeat hidden by a gap (count equal to the range's
size) is still found as bad rows by the exact check."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conformance.audit import seqcert

pytestmark = pytest.mark.req("TRACE-1")


def test_driver_hash_is_sparks_xxhash64(spark) -> None:
    from pyspark.sql import functions as F

    values = [0, 1, -1, 2, 41, 2**31, -(2**31) - 7, 2**62 + 12345, -(2**63), 2**63 - 1, 1_000_000_007]
    df = spark.createDataFrame([(v,) for v in values], "v long")
    expected = [r["h"] for r in df.select(F.xxhash64("v").alias("h")).collect()]
    assert seqcert.xxhash64_longs(np.array(values, dtype=np.int64)).tolist() == expected


def test_sparks_half_sums_add_up_to_the_exact_hash_sum(spark) -> None:
    """The catalog sums the hashes as two 64-bit half sums (no decimal arithmetic per row); put together on the
    driver they are the exact sum, hashes of either sign and sums far beyond 64 bits alike."""
    values = [*range(-50, 2000), 2**62 + 12345, -(2**63), 2**63 - 1]
    df = spark.createDataFrame([(v,) for v in values], "seq long")
    row = df.agg(*seqcert.aggregates()).collect()[0]
    exact = sum(int(h) for h in seqcert.xxhash64_longs(np.array(values, dtype=np.int64)))
    assert abs(exact) > 2**64, "the sum must need more than 64 bits, as a large recorder's does"
    assert seqcert.hash_sum(*(row[c] for c in seqcert.HALF_SUMS)) == exact


def test_range_sum_is_exact_across_chunks(monkeypatch) -> None:
    direct = sum(int(h) for h in seqcert.xxhash64_longs(np.arange(-5, 40, dtype=np.int64)))
    monkeypatch.setattr(seqcert, "CHUNK", 7)
    assert seqcert.range_hash_sum(-5, 39) == direct


def _summary(seqs: list[int]) -> seqcert.SeqSummary:
    s = seqcert.SeqSummary()
    hashes = seqcert.xxhash64_longs(np.array(seqs, dtype=np.int64))
    # Added in two parts, as the catalog merges its finer groups.
    for part in (slice(0, len(seqs) // 2), slice(len(seqs) // 2, None)):
        chunk = seqs[part]
        if chunk:
            s.add(len(chunk), min(chunk), max(chunk), sum(int(h) for h in hashes[part]))
    return s


@pytest.mark.parametrize(("seqs", "certified"), [
    ([1, 2, 3, 4, 5], True),
    ([5, 3, 4, 1, 2], True),
    ([], True),
    ([1, 2, 2, 4], False),  # a repeat hidden by a gap: count equals the range's size, the hash sum differs
    ([1, 2, 4], False),  # a gap: no certificate (the exact check decides)
    ([0, 0], False),
])
def test_certificate(seqs: list[int], certified: bool) -> None:
    assert _summary(seqs).certified() is certified


def test_repeat_hidden_by_a_gap_is_found(spark, tmp_path) -> None:
    from conformance.audit.frames import build_catalog
    from conformance.audit.load import load_trace

    def row(seq: int, msg: str) -> dict:
        return {"schema_version": 1, "run": "r", "ts": 1000 + seq, "source": "producer:p", "seq": seq,
                "event": "SEND", "topic": "T", "broker": "b", "queue_id": 0, "offset": seq, "msg_id": msg,
                "tags": "x"}

    rows = [row(1, "a"), row(2, "b"), row(2, "c"), row(4, "d")]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    loaded = load_trace(spark, path, tmp_path)
    catalog = build_catalog(loaded.rows)
    assert catalog.total_rows == 4
    assert len(catalog.duplicate_seq) == 1, "seq 2 repeats: its two rows are bad"
    loaded.cleanup()


def test_a_key_collision_is_refused_not_audited() -> None:
    """Names become 64-bit keys in the scans; two names with one key would merge two recorders, so the
    catalog refuses the trace (exit 2) instead (docs/audit.md, hash keys and exactness)."""
    from conformance.audit.frames import _name
    from conformance.audit.inputs import UnreadableTrace

    owners: dict = {}
    names: dict = {}
    _name(owners, names, 7, "r", "client:a")
    _name(owners, names, 7, "r", "client:a")
    assert names == {7: "client:a"}
    with pytest.raises(UnreadableTrace, match="collision"):
        _name(owners, names, 7, "r", "client:b")
