"""``mqtck matrix``: several runs' summary.json side by side, as matrix.json and one HTML page."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance import spec
from conformance.cli import main

#: The spec, read once: a run of every requirement asks for each one, and reading requirements.toml per entry
#: made each run fixture take tens of seconds.
REQUIREMENTS = spec.requirements()

EXPECTATION = {"reason": "broker answers <late> by design", "source": "apache/rocketmq#1234", "repro": "mqtck x --y"}


def requirement(rid: str, status: str, **extra: Any) -> dict[str, Any]:
    """One summary.json requirement entry, with the spec's text and a test whose outcome fits the status."""
    req = REQUIREMENTS[rid]
    outcome = {"pass": "passed", "unexpected-pass": "passed", "fail": "failed", "expected-fail": "failed",
               "not-applicable": "skipped"}.get(status)
    tests = [] if outcome is None else [{
        "nodeid": f"conformance/suite/test_x.py::test_{rid.lower().replace('-', '_')}", "outcome": outcome,
        "duration": 0.01, "message": f"Traceback ...\nAssertionError: {rid} full message" if outcome == "failed"
        else ("not applicable: needs clock_control" if outcome == "skipped" else ""),
        "summary": {"failed": f"{rid}: expected 3, got 4", "skipped": "not applicable: needs clock_control"}.get(
            outcome, ""),
    }]
    return {"id": rid, "level": req.level, "family": req.family, "sentence": req.sentence, "source": req.source,
            "capability": req.capability, "status": status, "tests": tests, "expectation": None,
            "profile": req.profile, **extra}


def write_run(root: Path, name: str, statuses: dict[str, str], *, omit: tuple[str, ...] = (),
              extra_reqs: list[dict[str, Any]] | None = None, **top: Any) -> Path:
    """A run dir whose summary.json passes every spec requirement except ``statuses``; returns the dir."""
    reqs = []
    for rid in REQUIREMENTS:
        if rid in omit:
            continue
        status = statuses.get(rid, "pass")
        extra = {"expectation": EXPECTATION} if status in ("expected-fail", "unexpected-pass") else {}
        reqs.append(requirement(rid, status, **extra))
    reqs += extra_reqs or []
    counts: dict[str, int] = {}
    for r in reqs:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    doc = {"target": "reference", "capabilities": ["pull"], "verdict": top.pop("verdict", "pass"), "counts": counts,
           "requirements": reqs, "duration_s": 1.5, "run": name, **top}
    run = root / name
    run.mkdir(parents=True)
    (run / "summary.json").write_text(json.dumps(doc), encoding="utf-8")
    return run


@pytest.fixture
def three_runs(tmp_path: Path) -> list[Path]:
    # A report dir with ``latest`` (as ``mqtck conform`` leaves it), no implementation key: label = target.
    ref_reports = tmp_path / "ref-reports"
    write_run(ref_reports, "20250101-000000-reference", {"OFFSET-1": "not-covered"})
    os.symlink("20250101-000000-reference", ref_reports / "latest")
    peer = write_run(
        tmp_path, "peer-run",
        {"OFFSET-1": "fail", "OFFSET-2": "expected-fail", "OFFSET-3": "unexpected-pass",
         "LPOLL-1": "not-applicable", "LPOLL-8": "fail"},
        verdict="fail", implementation="rocketmq-4.9.7", profile="strict", target="remoting://127.0.0.1:9876",
    )
    old = write_run(tmp_path, "old-run", {}, omit=("OFFSET-12",), implementation="reference over remoting",
                    profiles=[], extra_reqs=[requirement("OFFSET-1", "pass") | {"id": "GONE-1", "family": "GONE"}])
    return [ref_reports, peer, old]


def run_matrix(paths: list[Path], out: Path) -> int:
    return main(["matrix", *map(str, paths), "--out", str(out)])


def test_matrix_json_cells_counts_and_labels(three_runs: list[Path], tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    assert run_matrix(three_runs, out) == 0
    n = len(spec.requirements())
    line = capsys.readouterr().out.strip()
    assert line == f"matrix: {n + 1} requirements x 3 implementations -> {out / 'index.html'}"
    m = json.loads((out / "matrix.json").read_text())

    cols = m["columns"]
    assert [c["label"] for c in cols] == ["reference", "rocketmq-4.9.7", "reference over remoting"]
    assert [c["verdict"] for c in cols] == ["pass", "fail", "pass"]
    assert [c["must_fail"] for c in cols] == [0, 1, 0]  # LPOLL-8 is a SHOULD: its fail is not a MUST fail
    assert cols[0]["run"] == "20250101-000000-reference" and cols[1]["profiles"] == ["strict"]
    assert cols[1]["counts"] == {"pass": n - 5, "fail": 2, "error": 0, "expected-fail": 1, "unexpected-pass": 1,
                                 "partial": 0, "not-applicable": 1, "reference-only": 0, "not-covered": 0, "absent": 1}
    assert cols[2]["counts"]["absent"] == 1 and cols[2]["counts"]["pass"] == n  # n - 1 spec ones + GONE-1
    assert [x["id"] for x in cols[1]["must_expected_fail"]] == ["OFFSET-2"], "a known MUST deviation is listed first"
    assert cols[1]["must_expected_fail"][0]["reason"] == EXPECTATION["reason"] and cols[0]["must_expected_fail"] == []

    rows = {r["id"]: r for r in m["requirements"]}
    families_in_spec, reqs = spec.load()
    spec_order = [r.id for fam in families_in_spec for r in reqs.values() if r.family == fam]
    assert list(rows) == [*spec_order, "GONE-1"]  # grouped by family as SPEC.md is, file order inside
    peer = "rocketmq-4.9.7"
    assert rows["OFFSET-1"]["cells"][peer] == {
        "status": "fail", "summary": "OFFSET-1: expected 3, got 4", "expectation": None,
        "nodeid": "conformance/suite/test_x.py::test_offset_1",
        "message": "Traceback ...\nAssertionError: OFFSET-1 full message"}
    assert rows["OFFSET-1"]["cells"]["reference"]["status"] == "not-covered"
    assert rows["OFFSET-2"]["cells"][peer]["expectation"] == EXPECTATION
    assert rows["OFFSET-3"]["cells"][peer]["status"] == "unexpected-pass"
    assert rows["LPOLL-1"]["cells"][peer]["summary"] == "not applicable: needs clock_control"
    assert rows["OFFSET-12"]["cells"]["reference over remoting"]["status"] == "absent"
    assert rows["GONE-1"]["cells"]["reference"]["status"] == "absent"
    assert rows["GONE-1"]["cells"]["reference over remoting"]["status"] == "pass"

    families = {f["name"]: f for f in m["families"]}
    assert list(families) == [*(f for f in families_in_spec if f in families), "GONE"]
    assert families["OFFSET"]["title"] == families_in_spec["OFFSET"].title
    offset_total = sum(1 for r in spec.requirements().values() if r.family == "OFFSET")
    assert families["OFFSET"]["counts"][peer] == {
        "pass": offset_total - 3, "fail": 1, "error": 0, "expected-fail": 1, "unexpected-pass": 1, "partial": 0,
        "not-applicable": 0, "reference-only": 0, "not-covered": 0, "absent": 0}
    assert families["LPOLL"]["counts"][peer]["not-applicable"] == 1
    assert families["OFFSET"]["counts"]["reference over remoting"]["absent"] == 1


def test_html_has_anchors_details_and_expectations(three_runs: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_matrix(three_runs, out) == 0
    page = (out / "index.html").read_text()
    for anchor in ("detail-rocketmq-4-9-7-OFFSET-1", "detail-rocketmq-4-9-7-OFFSET-2",
                   "detail-reference-OFFSET-1", "detail-reference-over-remoting-OFFSET-12"):
        assert f'href="#{anchor}"' in page and f'id="{anchor}"' in page, anchor
    assert "broker answers &lt;late&gt; by design" in page  # the reason, escaped
    assert "apache/rocketmq#1234" in page and "mqtck x --y" in page
    assert "AssertionError: OFFSET-1 full message" in page and "<details><summary>full message" in page
    assert 'id="family-TRACE">' in page  # all pass everywhere: collapsed
    assert 'id="family-OFFSET" open>' in page
    assert "<script" not in page and "http://" not in page and "https://" not in page


def test_duplicate_labels_are_made_unique(tmp_path: Path) -> None:
    a = write_run(tmp_path, "a", {})
    assert run_matrix([a, a], tmp_path / "out") == 0
    m = json.loads((tmp_path / "out" / "matrix.json").read_text())
    assert [(c["label"], c["key"]) for c in m["columns"]] == [("reference", "reference"),
                                                               ("reference (2)", "reference-2")]


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (lambda d: d / "missing", "no such file or directory"),
        (lambda d: d, "neither summary.json nor latest/summary.json found"),
        (lambda d: (d / "s.json").write_text("{}") and d / "s.json", "not a directory"),
        (lambda d: (d / "summary.json").write_text("{oops") and d, "not valid JSON"),
        (lambda d: (d / "summary.json").write_text("[1]") and d, "not an mqtck summary"),
    ],
)
def test_bad_input_is_one_line_exit_2(tmp_path: Path, capsys, make, problem: str) -> None:
    path = make(tmp_path)
    assert run_matrix([path], tmp_path / "out") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("mqtck matrix: error: ") and str(path) in err[0]
    assert problem in err[0]
    assert not (tmp_path / "out").exists()


def test_out_must_not_be_a_file(tmp_path: Path, capsys) -> None:
    run = write_run(tmp_path, "r", {})
    (tmp_path / "taken").write_text("x")
    assert run_matrix([run], tmp_path / "taken") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"mqtck matrix: error: --out {tmp_path / 'taken'}: exists and is not a directory"]


def test_no_path_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["matrix", "--out", str(tmp_path / "out")])
    assert exc.value.code == 2


def test_matrix_of_a_real_conform_run(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    done = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "conform", "--target", "reference", "--only", "OFFSET-1",
         "OFFSET-2", "--report-dir", str(reports)], capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    peer = write_run(tmp_path, "peer", {"OFFSET-1": "expected-fail"}, implementation="rocketmq-5.5.0")
    assert run_matrix([reports, peer], tmp_path / "out") == 0
    m = json.loads((tmp_path / "out" / "matrix.json").read_text())
    rows = {r["id"]: r["cells"] for r in m["requirements"]}
    assert [c["label"] for c in m["columns"]] == ["reference", "rocketmq-5.5.0"]
    assert rows["OFFSET-1"]["reference"]["status"] == rows["OFFSET-2"]["reference"]["status"] == "pass"
    assert rows["OFFSET-1"]["rocketmq-5.5.0"]["status"] == "expected-fail"
    assert len(rows) == len(spec.requirements())
    assert set(rows) == set(spec.requirements()), "every requirement of SPEC.md is a row"
    text = (tmp_path / "out" / "matrix.json").read_text()
    assert str(tmp_path) not in text and "/tmp/" not in text, "a published matrix carries no machine path"
    page = (tmp_path / "out" / "index.html").read_text()
    assert 'href="#detail-rocketmq-5-5-0-OFFSET-1"' in page and EXPECTATION["source"] in page


def test_the_published_matrix_has_every_requirement_and_no_machine_path() -> None:
    """docs/matrix is generated by `mqtck matrix` from gate runs: it must list the current spec, and name runs by
    their folder, never by one machine's paths."""
    doc = Path(__file__).resolve().parents[1] / "docs" / "matrix" / "matrix.json"
    m = json.loads(doc.read_text(encoding="utf-8"))
    rows = {r["id"] for r in m["requirements"]}
    assert set(spec.requirements()) <= rows, f"docs/matrix is stale: {sorted(set(spec.requirements()) - rows)}"
    text = doc.read_text(encoding="utf-8")
    for path in ("/tmp/", "/root/", "/home/", "/work/"):
        assert path not in text, f"docs/matrix/matrix.json carries a machine path ({path})"
    labels = [c["label"] for c in m["columns"]]
    assert {"rocketmq-4.9.7", "rocketmq-5.5.0"} <= set(labels), labels


def test_a_client_columns_target_names_the_client_not_its_command_line(tmp_path: Path) -> None:
    from conformance.report.matrix import Run, build

    doc = {"target": "client: HOME=/tmp/mqtck-x /root/.cache/mqtck/peers/go-v5/consumer", "implementation":
           "go-client-v5-5.1.2", "verdict": "pass", "requirements": [{"id": "PCLIENT-1", "status": "pass"}]}
    (column,) = build([Run(tmp_path / "run", doc)])["columns"]
    assert column["target"] == "client: go-client-v5-5.1.2"


def _narrowed_run(root: Path, name: str, statuses: dict[str, str], **top: Any) -> Path:
    """A run of ``--only``: it reports just ``statuses``' requirements."""
    return write_run(root, name, statuses, omit=tuple(r for r in REQUIREMENTS if r not in statuses), **top)


def test_update_fills_the_rows_a_narrowed_run_reports_and_keeps_the_others(three_runs: list[Path],
                                                                          tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_matrix(three_runs, out) == 0
    before = json.loads((out / "matrix.json").read_text())
    only = _narrowed_run(tmp_path, "only-run", {"OFFSET-1": "pass", "LPOLL-1": "expected-fail"},
                         implementation="rocketmq-4.9.7")
    assert main(["matrix", "--out", str(out), "--update", str(only)]) == 0
    after = json.loads((out / "matrix.json").read_text())
    assert [c["label"] for c in after["columns"]] == [c["label"] for c in before["columns"]]
    rows = {r["id"]: r["cells"]["rocketmq-4.9.7"]["status"] for r in after["requirements"]}
    assert rows["OFFSET-1"] == "pass" and rows["LPOLL-1"] == "expected-fail"
    assert rows["OFFSET-2"] == "expected-fail" and rows["LPOLL-8"] == "fail"  # not in the run: kept
    peer = next(c for c in after["columns"] if c["label"] == "rocketmq-4.9.7")
    assert peer["counts"]["fail"] == 1 and peer["must_fail"] == sum(
        1 for r in after["requirements"] if r["level"] == "MUST" and r["cells"]["rocketmq-4.9.7"]["status"] == "fail")
    assert spec.requirements()["LPOLL-1"].level == "MUST" and "LPOLL-1" in {e["id"] for e in peer["must_expected_fail"]}
    # the other columns are untouched
    assert [r["cells"]["reference"] for r in after["requirements"]] == [
        r["cells"]["reference"] for r in before["requirements"] if r["id"] in rows]


def test_update_with_a_label_or_a_new_implementation(three_runs: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_matrix(three_runs, out) == 0
    into = _narrowed_run(tmp_path, "into", {"OFFSET-12": "not-applicable"}, target="grpc://127.0.0.1:1")
    new = _narrowed_run(tmp_path, "new", {"OFFSET-1": "fail"}, implementation="rocketmq-rust-1.0.0")
    assert main(["matrix", "--out", str(out), "--update", f"reference over remoting={into}", str(new)]) == 0
    after = json.loads((out / "matrix.json").read_text())
    assert [c["label"] for c in after["columns"]][-1] == "rocketmq-rust-1.0.0"
    assert after["columns"][2]["run"] == "old-run", "a narrowed run leaves the column's run as it was"
    cells = {r["id"]: r["cells"] for r in after["requirements"]}
    assert cells["OFFSET-12"]["reference over remoting"]["status"] == "not-applicable"  # was absent in old-run
    assert cells["OFFSET-1"]["rocketmq-rust-1.0.0"]["status"] == "fail"
    assert cells["OFFSET-2"]["rocketmq-rust-1.0.0"]["status"] == "absent"
    rust = after["columns"][-1]
    assert rust["counts"]["fail"] == 1 and rust["counts"]["absent"] == len(after["requirements"]) - 1
    assert "<td" in (out / "index.html").read_text() and "rocketmq-rust-1.0.0" in (out / "index.html").read_text()


@pytest.mark.parametrize(("setup", "problem"), [
    (lambda out: None, "no matrix to update"),
    (lambda out: (out.mkdir(), (out / "matrix.json").write_text("{oops")), "not a readable matrix.json"),
    (lambda out: (out.mkdir(), (out / "matrix.json").write_text('{"version": 9}')), "not a matrix.json of version 1"),
])
def test_update_of_a_missing_or_foreign_matrix_is_one_line_exit_2(tmp_path: Path, capsys, setup, problem) -> None:
    out = tmp_path / "out"
    setup(out)
    run = write_run(tmp_path, "r", {})
    assert main(["matrix", "--out", str(out), "--update", str(run)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("mqtck matrix: error: ") and problem in err[0]


def test_update_label_without_a_path_is_one_line_exit_2(tmp_path: Path, capsys) -> None:
    assert main(["matrix", "--out", str(tmp_path), "--update", "rocketmq-5.5.0="]) == 2
    assert "LABEL=PATH needs a label and a path" in capsys.readouterr().err


def test_update_with_a_whole_run_makes_it_the_columns_run(three_runs: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_matrix(three_runs, out) == 0
    whole = write_run(tmp_path, "whole", {"OFFSET-1": "fail"}, verdict="fail", implementation="rocketmq-4.9.7")
    assert main(["matrix", "--out", str(out), "--update", str(whole)]) == 0
    peer = next(c for c in json.loads((out / "matrix.json").read_text())["columns"] if c["label"] == "rocketmq-4.9.7")
    assert (peer["run"], peer["verdict"], peer["key"]) == ("whole", "fail", "rocketmq-4-9-7")
    assert peer["counts"]["fail"] == 1 and peer["counts"]["expected-fail"] == 0
