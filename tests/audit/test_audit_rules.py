"""The auditor's tables and rules that need no Spark: categories and their requirements, the order-class
derivation of the offset-correction table, options and input detection."""

from __future__ import annotations

import argparse
import gzip

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance import spec
from conformance.audit import options
from conformance.audit.categories import BY_NAME, CATEGORIES, provisional_ids, resolve
from conformance.audit.inputs import UnreadableTrace, detect
from conformance.audit.params import AuditParams
from conformance.cli import main
from reference.rules.status import CORRECTION_TABLE, check_offset, overflow_to_max

pytest.importorskip("pyspark")
from conformance.audit.offsets import ROW_REQUIREMENT, representatives  # noqa: E402


@pytest.mark.req("TRACE-1")
def test_categories_cite_requirements() -> None:
    reqs = spec.requirements()
    assert len(BY_NAME) == len(CATEGORIES)
    for cat in CATEGORIES:
        resolved = resolve(cat.requirement, cat)
        assert resolved.level in ("MUST", "SHOULD", "MAY")
        if cat.requirement in reqs:
            assert resolved.in_spec and resolved.level == reqs[cat.requirement].level
    assert resolve("TRACE-1").in_spec
    assert provisional_ids() == [], "every category cites a requirement of the spec"
    assert not resolve("NOPE-1", BY_NAME["lost"]).in_spec
    assert {c.name for c in CATEGORIES if not c.violation} == {
        "expired", "pending", "duplicate-rebalance", "duplicate-crash", "duplicate-retry",
        "duplicate-pop-redelivery", "slow-wake"}


@pytest.mark.req("OFFSET-1", "OFFSET-2", "OFFSET-3", "OFFSET-4", "OFFSET-5")
def test_every_correction_row_names_its_requirement() -> None:
    rows = (*CORRECTION_TABLE, *overflow_to_max(CORRECTION_TABLE))
    assert {row.condition for row in rows} == set(ROW_REQUIREMENT)
    assert len(representatives()) == 16


def _signs(offset: int, lo: int, hi: int) -> tuple[int, ...]:
    values = (0, lo, hi, offset)
    return tuple((a > b) - (a < b) for i, a in enumerate(values) for b in values[i + 1:])


@given(st.integers(0, 50), st.integers(0, 50), st.integers(0, 50))
def test_the_table_is_constant_on_order_classes(offset: int, a: int, b: int) -> None:
    """The premise of the Spark expression (offsets.expected_correction): check_offset depends only on
    how 0, min, max and the offset compare, and answers one of them."""
    lo, hi = min(a, b), max(a, b)
    rep = next(r for r in representatives() if _signs(*r) == _signs(offset, lo, hi))
    status, nxt = check_offset(offset, lo, hi)
    rep_status, rep_next = check_offset(*rep)
    assert status == rep_status
    if status is not None:
        symbols = dict(zero=0, min=lo, max=hi, offset=offset)
        rep_symbols = dict(zero=0, min=rep[1], max=rep[2], offset=rep[0])
        assert any(rep_symbols[s] == rep_next and symbols[s] == nxt for s in symbols)


def test_options_validate() -> None:
    parser = argparse.ArgumentParser()
    options.add_arguments(parser)
    args = parser.parse_args(["t", "--report-dir", "r", "--settle-ms", "5", "--strict-commit"])
    params = options.params_from(args)
    assert params == AuditParams(settle_ms=5, retry_settles_commit=False)
    with pytest.raises(ValueError, match="--wake-bound-ms"):
        options.params_from(parser.parse_args(["t", "--report-dir", "r", "--wake-bound-ms", "-1"]))


def test_inputs_are_recognised_or_refused(tmp_path) -> None:
    (tmp_path / "a.jsonl").write_text("{}\n")
    with gzip.open(tmp_path / "b.jsonl.gz", "wt") as fh:
        fh.write("{}\n")
    assert detect(tmp_path / "a.jsonl") == ("jsonl", [str(tmp_path / "a.jsonl")])
    assert detect(tmp_path)[0] == "jsonl" and len(detect(tmp_path)[1]) == 2
    (tmp_path / "x.csv").write_text("a,b\n")
    empty = tmp_path / "empty"
    empty.mkdir()
    for bad in (tmp_path / "missing", tmp_path / "x.csv", empty):
        with pytest.raises(UnreadableTrace):
            detect(bad)


def test_cli_refuses_unreadable_input_without_spark(tmp_path, capsys) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    for target in (tmp_path / "missing", tmp_path / "notes.txt"):
        assert main(["audit", str(target), "--report-dir", str(tmp_path / "r")]) == 2
        err = capsys.readouterr().err
        assert err.startswith("mqtck audit: error: ") and err.count("\n") == 1
    assert main(["audit", str(tmp_path), "--report-dir", str(tmp_path / "r"), "--settle-ms", "-5"]) == 2


def test_cli_refuses_input_that_is_not_a_trace_before_spark(tmp_path, capsys, monkeypatch) -> None:
    """Someone else's JSON Lines or Parquet (a wrong path or glob) is a usage error, exit 2, naming the file and
    the missing base columns, decided before a JVM starts; Spark would read it as all bad rows and exit 1."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from conformance.audit import session

    def no_spark(*args: object, **kwargs: object) -> None:
        raise AssertionError("Spark started for an input that is not a trace")

    monkeypatch.setattr(session, "spark_session", no_spark)
    (tmp_path / "hello.jsonl").write_text('{"hello": 1}\n')
    (tmp_path / "text.jsonl").write_text("plain text\n")
    with gzip.open(tmp_path / "half.jsonl.gz", "wt") as fh:
        fh.write('\n{"schema_version": 1, "run": "r", "event": "END"}\n')
    pq.write_table(pa.table({"a": [1, 2]}), tmp_path / "table.parquet")
    cases = {
        "hello.jsonl": "line 1 lacks columns schema_version, run, ts, source, seq, event",
        "text.jsonl": "line 1 is not a JSON object",
        "half.jsonl.gz": "line 2 lacks columns ts, source, seq",
        "table.parquet": "its schema lacks columns schema_version, run, ts, source, seq, event",
    }
    for name, reason in cases.items():
        assert main(["audit", str(tmp_path / name), "--report-dir", str(tmp_path / "r")]) == 2
        expected = f"mqtck audit: error: {tmp_path / name} is not a trace (schema v1): {reason}\n"
        assert capsys.readouterr().err == expected


def test_a_trace_with_bad_rows_among_good_ones_is_a_trace(tmp_path) -> None:
    """Only input that cannot be a trace is refused: bad rows before a good one (within the first lines read) are
    the audit's bad-row findings, and a partitioned Parquet trace's ``run`` comes from its directory."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from conformance.audit.inputs import check_trace
    from reference.rules.trace_schema import ARROW_SCHEMA

    row = '{"schema_version": 1, "run": "r", "ts": 0, "source": "broker:b", "seq": 1, "event": "END"}\n'
    (tmp_path / "t.jsonl").write_text('not json\n{"hello": 1}\n' + row)
    assert check_trace(tmp_path / "t.jsonl") == ("jsonl", [str(tmp_path / "t.jsonl")])
    partition = tmp_path / "parquet" / "run=r"
    partition.mkdir(parents=True)
    pq.write_table(pa.table({n: [None] for n in ARROW_SCHEMA.names if n != "run"}), partition / "part-0.parquet")
    assert check_trace(tmp_path / "parquet")[0] == "parquet"
