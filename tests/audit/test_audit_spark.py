"""The Spark auditor end to end, in local mode (one session per test process, see conftest.py).

Each test audits one dataset: the synthetic trace with every fault kind injected (plus a clean run),
the hand-written fixtures of ``fixtures/traces`` (one run per file, expected counts in
``expected.json``, a malformed file among them), and the traces recorded by the reference
implementation. Exact counts both ways: no fault missed, no finding that was not injected.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.audit.categories import CATEGORIES
from conformance.audit.synth import synthesize
from conformance.audit.synth.faults import KINDS
from conformance.cli import main
from tests.audit.recorders import RECORDERS

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "traces"
#: Two of each kind where the small workload has room, one otherwise.
INJECT = {kind: 2 for kind in KINDS} | {"duplicate-crash": 1, "pending": 1, "expired": 1}


def _counts(summary: dict, run: str) -> dict[str, int]:
    return {name: c["count"] for name, c in summary["runs"][run]["categories"].items() if c["count"]}


@pytest.mark.req("OFFSET-1", "OFFSET-2", "OFFSET-3", "OFFSET-4", "OFFSET-5")
def test_offset_expression_is_the_correction_table(spark) -> None:
    """The CASE expression equals check_offset on a grid, for the seed's table and for Apache's (OFFSET-4)."""
    from pyspark.sql import functions as F

    from conformance.audit.offsets import expected_correction
    from reference.rules.status import CORRECTION_TABLE, check_offset, overflow_to_max

    grid = [(o, lo, hi) for hi in range(0, 7) for lo in range(0, hi + 1) for o in range(0, 9)]
    df = spark.createDataFrame(grid, "offset long, lo long, hi long")
    for table in (CORRECTION_TABLE, overflow_to_max(CORRECTION_TABLE)):
        want = expected_correction(F.col("offset"), F.col("lo"), F.col("hi"), table)
        for r in df.select("offset", "lo", "hi", want.alias("w")).collect():
            status, nxt = check_offset(r["offset"], r["lo"], r["hi"], table=table)
            if status is None:
                assert r["w"] is None, r
            else:
                assert (r["w"]["status"], r["w"]["next_offset"]) == (status.name, nxt), r


@pytest.mark.req("TRACE-1")
def test_synthetic_faults_are_found_exactly(spark, tmp_path, capsys) -> None:
    trace = tmp_path / "trace"
    synthesize(trace, 30_000, seed=11, inject=INJECT, run="faulty")
    synthesize(trace, 12_000, seed=12, run="clean")
    manifest = json.loads((trace / "manifest.json").read_text())
    reports = tmp_path / "report"
    assert main(["audit", str(trace), "--report-dir", str(reports)]) == 1
    assert "MUST violations" in capsys.readouterr().out
    summary = json.loads((reports / "summary.json").read_text())
    want = {k: v for k, v in manifest["runs"]["faulty"]["expected"].items() if v}
    assert _counts(summary, "faulty") == want
    assert _counts(summary, "clean") == {}
    assert summary["runs"]["faulty"]["rows"] == manifest["runs"]["faulty"]["events"]
    for name, entry in summary["runs"]["faulty"]["categories"].items():
        assert len(entry["examples"]) == min(entry["count"], summary["params"]["max_witnesses"]), name
        for example in entry["examples"]:
            assert example["witnesses"], f"{name} findings carry witness events"
            assert example["requirement"]
    wake = summary["runs"]["clean"]["wake_latency"]
    assert wake["count"] > 0 and wake["max_ms"] <= 1_000
    assert sum(b["count"] for b in wake["buckets"]) == wake["count"]
    import pyarrow.dataset as ds

    findings = ds.dataset(str(reports / "findings"), format="parquet").to_table()
    assert findings.num_rows == sum(want.values())
    html = (reports / "report.html").read_text()
    assert html.count("<svg") >= 8 and "http" not in html.split("<body>")[1].split("xmlns")[0]
    assert not (reports / "_derived").exists()
    # The intermediates kept for the audit (local checkpoints, persisted frames) are released with it.
    assert spark.sparkContext._jsc.getPersistentRDDs().size() == 0


def test_hand_written_fixtures(spark, tmp_path) -> None:
    """fixtures/traces: a run per file, expected counts in expected.json; malformed.jsonl holds lines
    that break the schema in every way the schema names, and the rest of it is still audited."""
    from conformance.audit.job import run_audit

    expected = json.loads((FIXTURES / "expected.json").read_text())
    result = run_audit(FIXTURES, tmp_path)
    assert result.exit_code == 1
    assert set(result.summary["runs"]) == set(expected)
    for run, data in expected.items():
        want = {k: v for k, v in data["counts"].items() if v}
        assert _counts(result.summary, run) == want, run
    reasons = [e["detail"]["reason"] for run in ("malformed", "(no run)")
               for e in result.summary["runs"][run]["categories"]["bad-row"]["examples"]]
    assert "not a JSON object" in reasons
    offsets = result.summary["runs"]["offsets"]["categories"]["bad-offset-correction"]
    assert offsets["by_requirement"] == {"OFFSET-2": 1, "OFFSET-3": 1, "OFFSET-5": 1}
    # The wake 2.5 s after its SEND is reported with its witnesses, but a trace's clocks cannot tell a missing
    # wake-up from the #7358 race or a stall: no violation (a CI run found Apache RocketMQ "violating" it).
    slow = result.summary["runs"]["long_poll"]["categories"]["slow-wake"]
    assert slow["count"] == 1 and slow["violation"] is False and slow["examples"][0]["witnesses"]
    assert {c.name for c in CATEGORIES} == set(result.summary["totals"])
    _check_sequence_run(result.summary)


def _check_sequence_run(summary: dict) -> None:
    """sequence.jsonl: rows sharing a (run, source, seq) are bad, every one of them, with the rule as
    reason and the row as witness; a JSON integer spelled 1.0 or 3e0 is an integer (JSON Schema's
    reading) and its row is audited, 2.5 is not one and the reason names the column."""
    examples = summary["runs"]["sequence"]["categories"]["bad-row"]["examples"]
    reasons = sorted(e["detail"]["reason"] for e in examples)
    assert reasons == ["seq repeats within (run, source): seq must strictly increase"] * 2 + [
        "wrong type: offset must be an integer"], reasons
    twins = [e["witnesses"][0] for e in examples if "seq repeats" in e["detail"]["reason"]]
    assert {(w["source"], w["seq"], w["msg_id"]) for w in twins} == {("client:c1", 3, "m1"), ("client:c1", 3, "m2")}
    lost = summary["runs"]["sequence"]["categories"]["lost"]["examples"]
    assert sorted(e["msg_id"] for e in lost) == ["m1", "m2"], "the 1.0/3e0 row is audited as offset 1"
    assert [e["offset"] for e in lost if e["msg_id"] == "m1"] == [1]


@pytest.mark.req("TRACE-1")
def test_seq_and_integers_follow_the_schema_to_the_letter(spark, tmp_path) -> None:
    """fixtures/traces/sequence.jsonl (audited with the other fixtures above; here as Parquet): rows
    sharing a (run, source, seq) are bad rows, every one of them; Parquet has no 1.0 spelling of an
    integer, so the row with offset 2.5 is left out and the rest must give the same findings."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from conformance.audit.job import run_audit
    from reference.rules.trace_schema import COLUMNS

    good = [json.loads(line) for line in (FIXTURES / "sequence.jsonl").read_text().splitlines()]
    good = [r for r in good if r.get("offset") != 2.5]
    schema = pa.schema([(name, typ) for name, typ, _ in COLUMNS])
    table = pa.Table.from_pylist([{k: (int(v) if isinstance(v, float) else v) for k, v in r.items()} for r in good],
                                 schema=schema)
    pq.write_table(table, tmp_path / "sequence.parquet")
    again = run_audit(tmp_path / "sequence.parquet", tmp_path / "parquet")
    assert _counts(again.summary, "sequence") == {"bad-row": 2, "lost": 2}
    twins = again.summary["runs"]["sequence"]["categories"]["bad-row"]["examples"]
    assert {(e["witnesses"][0]["msg_id"], e["detail"]["reason"].split(":")[0]) for e in twins} == {
        ("m1", "seq repeats within (run, source)"), ("m2", "seq repeats within (run, source)")}


def test_jvm_start_noise_is_dropped_and_the_rest_passes(tmp_path) -> None:
    """The lines every JVM start prints (the vector-module notice, Spark's shell log-level hint) are
    dropped; anything else the JVM writes to stderr, such as a real error, still reaches ours."""
    import os
    import threading

    from conformance.audit.session import JVM_START_NOISE, _copy_without_noise

    read_end, write_end = os.pipe()
    out = tmp_path / "stderr"
    with out.open("wb") as sink:
        copier = threading.Thread(target=_copy_without_noise, args=(read_end, os.dup(sink.fileno())))
        copier.start()
        with os.fdopen(write_end, "wb") as jvm:
            for noise in JVM_START_NOISE:
                jvm.write(noise + b" (details)\n")
            jvm.write(b"ERROR SparkContext: something real\n")
        copier.join(timeout=10)
    assert out.read_bytes() == b"ERROR SparkContext: something real\n"


def test_recorded_traces_audit_clean(spark, tmp_path, capsys) -> None:
    """Traces the reference implementation recorded (tests/audit/recorders.py): the broker alone and the
    client simulator under crashes, departures, failing listeners, retention and a broker restart. Not
    one violation; what they may show is what at-least-once allows (duplicates with a cause, messages
    that retention removed before a revived broadcasting client read them)."""
    trace = tmp_path / "recorded"
    trace.mkdir()
    runs = {name: recorder(trace / f"{name}.jsonl.gz") for name, recorder in sorted(RECORDERS.items())}
    code = main(["audit", str(trace), "--report-dir", str(tmp_path / "r")])
    out, err = capsys.readouterr()
    assert code == 0 and "no MUST violated" in out, f"exit {code}: {err.strip() or out[-2000:]}"
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    allowed = {c.name for c in CATEGORIES if not c.violation}
    for name, run in runs.items():
        assert summary["runs"][run]["rows"] > 100, name
        found = _counts(summary, run)
        assert set(found) <= allowed, (name, found)
    assert _counts(summary, runs["broker"]) == {}


def test_a_spark_failure_after_reading_is_one_line_not_a_traceback(spark, tmp_path, capsys) -> None:
    """A column that is corrupt on disk but not read until the derivations (``detail``: the catalog reads
    run, event, client and seq only) fails the Spark job half-way: exit 2 with one line naming the cause."""
    import pyarrow.parquet as pq

    synthesize(tmp_path / "t", 3000, 1, {})
    files = sorted((tmp_path / "t").rglob("*.parquet"))
    meta = pq.ParquetFile(files[0]).metadata
    detail = meta.schema.names.index("detail")
    chunk = meta.row_group(0).column(detail)
    start = chunk.dictionary_page_offset or chunk.data_page_offset
    with files[0].open("r+b") as fh:  # the page header of the detail column becomes garbage
        fh.seek(start)
        fh.write(b"\xff" * 16)
    assert main(["audit", str(tmp_path / "t"), "--report-dir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mqtck audit: error: the Spark job failed: ") and err.count("\n") == 1, err


@pytest.mark.req("TRACE-1", "ALO-1", "CONSUME-2")
def test_checks_a_runs_events_cannot_support_are_not_judged(spark, tmp_path, capsys) -> None:
    """A run recorded off the wire (broker rows only: sends, heartbeats, commits) cannot show what a listener
    did: loss and commit safety are not judged there, and nothing is reported as lost. Keep one row a client
    recorded and its silence about consumption becomes evidence: the same messages are lost."""
    rows = [json.loads(line) for line in (FIXTURES / "commits.jsonl").read_text().splitlines() if line.strip()]
    wire = [r for r in rows if not r["source"].startswith("client:")]
    assert {r["event"] for r in wire} >= {"SEND", "SUBSCRIBE", "COMMIT"} and "CONSUME" not in {r["event"] for r in wire}
    client_said = wire + [next(r for r in rows if r["source"].startswith("client:") and r["event"] == "ASSIGN")]
    verdicts = {}
    for name, trace_rows in (("wire", wire), ("client", client_said)):
        trace = tmp_path / f"{name}.jsonl"
        trace.write_text("".join(json.dumps(r) + "\n" for r in trace_rows))
        verdicts[name] = main(["audit", str(trace), "--report-dir", str(tmp_path / name)])
        summary = json.loads((tmp_path / name / "summary.json").read_text())
        cats = summary["runs"]["commits"]["categories"]
        verdicts[name, "lost"] = cats["lost"]["count"], cats["lost"]["judged"]
        verdicts[name, "out"] = capsys.readouterr().out
        verdicts[name, "html"] = (tmp_path / name / "report.html").read_text()
        verdicts[name, "not_judged"] = summary["not_judged"]
    assert verdicts["wire"] == 0 and verdicts["wire", "lost"] == (0, False)
    why = "no CONSUME rows, ACK rows or rows recorded by a client"
    assert verdicts["wire", "not_judged"]["lost"] == {"commits": why}
    assert verdicts["wire", "not_judged"]["unsafe-commit"] == {"commits": why}
    assert f"not judged, {why}: lost, expired, pending, unsafe-commit" in verdicts["wire", "out"]
    assert "Not judged here" in verdicts["wire", "html"] and why in verdicts["wire", "html"]
    assert verdicts["client"] == 1 and verdicts["client", "lost"] == (4, True), "m0..m3 were never consumed"
    assert "lost" not in verdicts["client", "not_judged"]


def _pull(run: str, seq: int, ts: int, offset: int, **resp: object) -> list[dict]:
    """A broker-recorded PULL_REQ at ``ts`` µs and, with ``resp``, its PULL_RESP (``after`` µs later)."""
    base = {"schema_version": 1, "run": run, "source": "broker:b", "group": "G", "client_id": "c1", "topic": "T",
            "broker": "b", "queue_id": 0, "offset": offset}
    after = int(resp.pop("after", 0))
    req = {**base, "ts": ts, "seq": seq, "event": "PULL_REQ", "max_nums": 32, "suspend_ms": int(resp.pop("suspend", 0))}
    return [req, {**base, "ts": ts + after, "seq": seq + 1, "event": "PULL_RESP", "count": 0, "held_ms": after // 1000,
                  **resp}]


@pytest.mark.req("OFFSET-4", "LPOLL-2")
def test_what_a_conforming_apache_broker_answers_is_not_a_finding(spark, tmp_path) -> None:
    """Two answers the seeds' broker does not give and a correct Apache RocketMQ broker does, both allowed by
    their requirement: past the max of a queue whose min is 0, next offset = the max (OFFSET-4, since 4.9.4);
    a held pull answered early at a periodic check after a message its filter rejects arrived (LPOLL-2; the
    answer's max_offset shows the arrival). Next to each, the answer that stays a finding."""
    overflow = {"status": "OFFSET_OVERFLOW_BADLY", "min_offset": 0, "max_offset": 4}
    rows = [
        *_pull("r", 1, 1_000, 9, next_offset=4, **overflow),          # Apache: the max
        *_pull("r", 3, 2_000, 9, next_offset=0, **overflow),          # the seed: 0
        *_pull("r", 5, 3_000, 9, next_offset=2, **overflow),          # neither: a finding
        *_pull("r", 7, 4_000, 4, suspend=15_000, after=5_000_000, status="NO_MATCHED_MESSAGE", next_offset=5,
               min_offset=0, max_offset=5),                            # a rejected message arrived: allowed
        *_pull("r", 9, 10_000_000, 5, suspend=15_000, after=5_000_000, status="OFFSET_OVERFLOW_ONE", next_offset=5,
               min_offset=0, max_offset=5),                            # nothing arrived: early
        {"schema_version": 1, "run": "r", "source": "broker:b", "seq": 11, "ts": 20_000_000, "event": "END"},
    ]
    trace = tmp_path / "apache.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["audit", str(trace), "--report-dir", str(tmp_path / "report")]) == 1
    summary = json.loads((tmp_path / "report" / "summary.json").read_text())
    cats = summary["runs"]["r"]["categories"]
    assert cats["bad-offset-correction"]["count"] == 1
    assert [w["next_offset"] for w in cats["bad-offset-correction"]["examples"][0]["witnesses"]] == [2]
    assert cats["early-poll-return"]["count"] == 1
    assert cats["early-poll-return"]["examples"][0]["offset"] == 5


@pytest.mark.req("TRACE-1")
def test_trace_text_in_the_report_is_escaped_not_markup(spark, tmp_path) -> None:
    """A trace is another system's output: a bad row whose text holds markup is shown in report.html as text (the
    template escapes what it inserts), never run by the browser that opens the report."""
    row = {"schema_version": 1, "run": "r", "ts": 1000, "source": "producer:p", "seq": 1,
           "event": "<script>alert(1)</script>", "topic": "T"}
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps(row) + "\n")
    assert main(["audit", str(trace), "--report-dir", str(tmp_path / "r")]) == 1
    page = (tmp_path / "r" / "report.html").read_text()
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page or "&#34;&lt;script&gt;" in page
