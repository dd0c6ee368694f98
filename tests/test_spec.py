"""The spec file is well-formed, SPEC.md is its current rendering, and every ID is tested."""

from __future__ import annotations

from pathlib import Path

from conformance import spec
from conformance.commands.spec import coverage_problems


def test_spec_md_is_rendered_from_requirements() -> None:
    families, reqs = spec.load()
    assert spec.SPEC_MD.read_text(encoding="utf-8") == spec.render_markdown(families, reqs), (
        "SPEC.md is stale: run `mqtck spec render`"
    )


def test_every_requirement_has_a_test_and_every_marker_a_requirement() -> None:
    assert coverage_problems(Path(__file__).resolve().parents[1]) == []


def test_every_requirement_names_a_known_capability() -> None:
    from conformance.targets import CAPABILITIES

    _, reqs = spec.load()
    unknown = {r.id: r.capability for r in reqs.values() if r.capability not in CAPABILITIES}
    assert unknown == {}


SPLIT = '''
[[family]]
name = "X"
title = "x"

[[requirement]]
id = "X-1"
level = "MUST"
sentence = "A closed channel leaves; a silent one expires."
source = "seed 001 §6"
capability = "pull"
[requirement.clauses]
closed = "A closed channel leaves its group."
expiry = "A silent channel expires."

[[requirement]]
id = "X-2"
level = "MUST"
sentence = "The reference records its trace."
source = "trace-schema.md"
capability = "trace"
scope = "reference"

[[requirement]]
id = "X-3"
level = "MUST"
sentence = "Something only the reference's design says."
source = "mqtck design"
capability = "pull"
'''


def _spec_tree(tmp_path: Path, tests: str) -> Path:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text(tests, encoding="utf-8")
    path = tmp_path / "requirements.toml"
    path.write_text(SPLIT, encoding="utf-8")
    return path


def test_spec_check_wants_each_clause_marked_and_a_seed_behind_each_must(tmp_path: Path, monkeypatch) -> None:
    path = _spec_tree(tmp_path, 'import pytest\n\n@pytest.mark.req("X-1")\ndef test_a(): ...\n\n'
                                '@pytest.mark.req("X-1.closed", "X-1.nope", "X-2", "X-3")\ndef test_b(): ...\n')
    real = spec.load
    monkeypatch.setattr(spec, "load", lambda *_: real(path))
    problems = coverage_problems(tmp_path)
    assert "X-1: marked bare on tests/test_x.py::test_a; it lists clauses, so mark the one judged" in [
        p.replace(str(tmp_path) + "/", "") for p in problems]
    assert any(p.startswith("X-1.nope: marked on") for p in problems)
    assert "X-1.expiry: no test is marked with this clause" in problems
    assert any(p.startswith("X-3: a MUST must cite a seed") for p in problems)
    assert not any(p.startswith("X-2") for p in problems), "a reference-only requirement cites the trace schema"


def test_a_requirement_passes_only_when_every_clause_was_judged(tmp_path: Path, monkeypatch) -> None:
    from conformance import report

    path = _spec_tree(tmp_path, "")
    real = spec.load
    monkeypatch.setattr(spec, "load", lambda *_: real(path))

    def result(reqs: list[str], outcome: str, message: str = "") -> report.TestResult:
        return report.TestResult("t::" + "-".join(reqs), reqs, outcome, 0.1, message, message)

    skip = "not applicable: a silent channel expires after up to 130 s here, longer than this test waits (30 s)"
    lacks = "not applicable: target lacks capability trace"
    vs = {v.id: v for v in report.verdicts([result(["X-1.closed"], "passed"), result(["X-1.expiry"], "skipped", skip),
                                            result(["X-2"], "skipped", lacks)])}
    assert vs["X-1"].status == "partial", "a clause that could not be judged leaves the requirement partial"
    assert [(c["key"], c["status"]) for c in vs["X-1"].clauses] == [("closed", "pass"), ("expiry", "not-applicable")]
    assert vs["X-1"].clauses[1]["reason"] == skip
    assert vs["X-2"].status == "reference-only" and vs["X-3"].status == "not-covered"
    both = [result(["X-1.closed"], "passed"), result(["X-1.expiry"], "passed")]
    assert {v.id: v.status for v in report.verdicts(both)}["X-1"] == "pass"
    failed = [result(["X-1.closed"], "passed"), result(["X-1.expiry"], "failed", "AssertionError")]
    assert {v.id: v.status for v in report.verdicts(failed)}["X-1"] == "fail"
    assert report.exit_code(report.verdicts(failed)) == 1
    assert report.exit_code(list(vs.values())) == 0, "partial does not gate: nothing failed"


def test_a_test_whose_setup_failed_leaves_its_requirement_in_error_not_failed(tmp_path: Path, monkeypatch) -> None:
    """A failed setup (the target's broker did not start, a probe timed out) judged nothing: the requirement is
    ``error``, neither a failure of the implementation nor, beside a passing clause, a pass; the run does not pass;
    JUnit says ``<error>``; a reviewed deviation listed for it does not turn it into an expected fail."""
    import xml.etree.ElementTree as ET

    from conformance import report
    from conformance.expectations import Expectation, Expectations

    path = _spec_tree(tmp_path, "")
    real = spec.load
    monkeypatch.setattr(spec, "load", lambda *_: real(path))
    monkeypatch.setattr(spec, "requirements", lambda *_: real(path)[1])

    def result(reqs: list[str], outcome: str, message: str = "") -> report.TestResult:
        return report.TestResult("t::" + "-".join(reqs), reqs, outcome, 0.1, message, message)

    timeout = "TimeoutError: the probe of the broker's capabilities took over 10 s"
    errored = [result(["X-1.closed"], "passed"), result(["X-1.expiry"], "error", timeout),
               result(["X-3"], "error", timeout)]
    listed = Expectations("x", "X", "1", {"X-3": Expectation("X-3", "a reviewed deviation", "upstream", "repro")})
    vs = {v.id: v for v in report.verdicts(errored, listed)}
    assert vs["X-1"].status == "error" and vs["X-3"].status == "error"
    assert [(c["key"], c["status"], c["reason"]) for c in vs["X-1"].clauses] == [
        ("closed", "pass", ""), ("expiry", "error", timeout)]
    assert report.exit_code(list(vs.values())) == 1
    doc = report.summary("t", [], list(vs.values()), errored)
    assert doc["verdict"] == "error" and doc["tests"] == {"total": 3, "failed": 0, "errors": 2}
    failed = [*errored, result(["X-1.closed"], "failed", "AssertionError")]
    assert report.summary("t", [], report.verdicts(failed), failed)["verdict"] == "fail", "a judged failure first"
    suite = ET.fromstring(report.junit_xml("t", list(vs.values())))
    assert (suite.get("errors"), suite.get("failures")) == ("2", "0")
    assert [e.get("message") for e in suite.iter("error")] == [f"X-1 (MUST) not judged: {timeout}",
                                                               f"X-3 (MUST) not judged: {timeout}"]


def test_the_results_file_calls_a_failed_setup_an_error(tmp_path: Path) -> None:
    """The plugin's results line for a test whose fixture raised says ``error``, for a failed assertion ``failed``."""
    import json
    import subprocess
    import sys

    (tmp_path / "test_x.py").write_text(
        "import pytest\n\n@pytest.fixture\ndef broker():\n    raise TimeoutError('broker did not start')\n\n"
        "@pytest.mark.req('X-1')\ndef test_setup(broker): ...\n\n@pytest.mark.req('X-2')\ndef test_call():\n"
        "    assert 1 == 2\n", encoding="utf-8")
    results = tmp_path / "results.jsonl"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path / "test_x.py"),
                    f"--mqtck-results={results}"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    assert {line["nodeid"].split("::")[-1]: line["outcome"] for line in lines} == {"test_setup": "error",
                                                                                    "test_call": "failed"}
    assert "broker did not start" in next(line["summary"] for line in lines if line["outcome"] == "error")
