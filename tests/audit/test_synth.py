"""``mqtck trace synth``: valid, deterministic traces with exactly the requested faults (no Spark here;
the audit of these traces is in test_audit_spark.py)."""

from __future__ import annotations

import json
from collections import Counter

import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest

from conformance.audit import synth
from conformance.audit.categories import CATEGORIES
from conformance.audit.synth.faults import KINDS, InjectionError, parse_inject
from conformance.cli import main
from reference.rules.trace_schema import ARROW_SCHEMA, EVENT_REQUIRED, missing_columns


def _table(path):
    return ds.dataset(str(path), format="parquet", partitioning="hive", exclude_invalid_files=True).to_table()


def test_every_category_can_be_injected() -> None:
    assert set(KINDS) == {c.name for c in CATEGORIES}
    assert parse_inject("lost=2, slow-wake=1,lost=1") == {"lost": 3, "slow-wake": 1}
    assert parse_inject("") == {}
    for bad in ("lost", "lost=x", "lost=-1", "teleport=1"):
        with pytest.raises(InjectionError):
            parse_inject(bad)


def test_trace_follows_the_schema(tmp_path) -> None:
    manifest = synth.synthesize(tmp_path, 20_000, seed=3, inject={"bad-row": 2})
    run = manifest["runs"]["run-0"]
    files = sorted((tmp_path / "run=run-0").glob("part-*.parquet"))
    assert files, "partitioned by run"
    import pyarrow.parquet as pq

    assert pq.read_schema(files[0]).remove_metadata().equals(ARROW_SCHEMA.remove_metadata())
    table = pq.read_table(files[0]).to_pylist() + [r for f in files[1:] for r in pq.read_table(f).to_pylist()]
    assert len(table) == run["events"] and 10_000 < run["events"] < 40_000
    bad = [r for r in table if r["event"] not in EVENT_REQUIRED or missing_columns(r)]
    assert len(bad) == 2, "exactly the injected bad rows break the schema"
    seqs: dict[str, list[int]] = {}
    for r in sorted(table, key=lambda r: (r["source"], r["ts"], r["seq"])):
        seqs.setdefault(r["source"], []).append(r["seq"])
    for source, values in seqs.items():
        assert values == sorted(set(values)), f"seq of {source} strictly increases with ts"
    kinds = Counter(r["event"] for r in table)
    for event in ("SEND", "ASSIGN", "REVOKE", "PULL_REQ", "PULL_RESP", "DELIVER", "CONSUME", "COMMIT", "POP", "ACK",
                  "CHANGE_INVISIBLE", "REVIVE", "FLOW", "DISPATCH", "RETENTION", "SUBSCRIBE", "CRASH", "END"):
        assert kinds[event] > 0, f"the workload records {event}"
    models = {r["model"] for r in table if r["event"] == "SUBSCRIBE"}
    assert models == {"CLUSTERING", "BROADCASTING"}


def test_same_seed_same_trace_whatever_the_chunking(tmp_path, monkeypatch) -> None:
    synth.synthesize(tmp_path / "a", 30_000, seed=7, inject={"lost": 1, "duplicate-crash": 1})
    monkeypatch.setattr(synth, "CHUNK_ROWS", 3_000)
    synth.synthesize(tmp_path / "b", 30_000, seed=7, inject={"lost": 1, "duplicate-crash": 1})
    a, b = _table(tmp_path / "a"), _table(tmp_path / "b")
    assert len(list((tmp_path / "b" / "run=run-0").glob("*.parquet"))) > 1
    key = [("source", "ascending"), ("seq", "ascending")]
    assert a.sort_by(key).equals(b.sort_by(key))
    c = synth.synthesize(tmp_path / "c", 30_000, seed=8)
    assert _table(tmp_path / "c").num_rows == c["events"]
    assert not _table(tmp_path / "c").sort_by(key).equals(a.sort_by(key))


def test_manifest_records_runs_and_expected_counts(tmp_path) -> None:
    synth.synthesize(tmp_path, 10_000, seed=1, inject={"lost": 2, "permit-freeze": 1}, run="faulty")
    synth.synthesize(tmp_path, 10_000, seed=2, run="clean")
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert set(manifest["runs"]) == {"faulty", "clean"}
    assert manifest["runs"]["faulty"]["expected"]["lost"] == 2
    assert manifest["runs"]["faulty"]["expected"]["permit-freeze"] == 1
    assert sum(manifest["runs"]["clean"]["expected"].values()) == 0
    assert manifest["events"] == sum(r["events"] for r in manifest["runs"].values())
    runs = _table(tmp_path).column("run")
    assert set(pc.unique(runs).to_pylist()) == {"faulty", "clean"}


def test_too_many_faults_for_the_workload_are_refused(tmp_path) -> None:
    with pytest.raises(InjectionError, match="lost"):
        synth.synthesize(tmp_path, 5_000, inject={"lost": 10_000})


def test_cli_synth(tmp_path, capsys) -> None:
    assert main(["trace", "synth", "--events", "5000", "--seed", "4", "--out", str(tmp_path),
                 "--inject", "unsafe-commit=1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["injected"] == {"unsafe-commit": 1} and out["events"] > 0
    assert main(["trace", "synth", "--events", "0", "--out", str(tmp_path)]) == 2
    assert main(["trace", "synth", "--events", "10", "--out", str(tmp_path), "--inject", "nope=1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and "unknown kind 'nope'" in err
    assert main(["trace", "synth", "--list-kinds"]) == 0
    assert set(capsys.readouterr().out.split()) == set(KINDS)
