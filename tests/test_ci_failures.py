"""``.ci/failures.py``, the test command's last environment: what failed, again, at the tail of the CI log.

Its inputs are real: a JUnit file written by pytest for a failing test, and one written by ``mqtck conform``'s
report for a failed MUST, a failed SHOULD (reported, not gating) and a reviewed expected fail.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conformance.report import Verdict, junit_xml

SCRIPT = Path(__file__).resolve().parents[1] / ".ci" / "failures.py"


def _failures(directory: Path, *names: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), str(directory), *names], capture_output=True, text=True,
                          timeout=60)


def _verdict(rid: str, level: str, status: str, outcome: str, expectation: dict | None = None) -> Verdict:
    test = {"nodeid": f"test_x.py::test_{rid.lower()}", "outcome": outcome, "duration": 0.5,
            "message": f"Traceback ...\nAssertionError: {rid} went wrong", "summary": f"{rid} went wrong"}
    return Verdict(rid, level, rid.split("-")[0], f"The sentence of {rid}.", "seed", "", status, [test], expectation)


def test_every_failure_is_repeated_gating_ones_last_and_a_missing_file_fails_the_run(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "test_one.py").write_text("def test_fine():\n    pass\n\n\ndef test_broken():\n"
                                      "    assert 1 + 1 == 3, 'arithmetic is off'\n")
    junit = tmp_path / "junit"
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                          f"--junitxml={junit / 'ci.xml'}", str(work / "test_one.py")],
                         capture_output=True, text=True, cwd=work, timeout=120)
    assert ran.returncode == 1, ran.stdout
    vs = [_verdict("PULL-1", "MUST", "fail", "failed"), _verdict("INPUT-4", "SHOULD", "fail", "failed"),
          _verdict("POP-11", "SHOULD", "expected-fail", "failed", {"reason": "reviewed"}),
          _verdict("LPOLL-4", "MUST", "pass", "passed")]
    (junit / "rocketmq-5.5.0.xml").write_bytes(junit_xml("remoting://x", vs))

    result = _failures(junit, "ci", "rocketmq-5.5.0", "peers")
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    heads = [line for line in lines if line.startswith(("FAIL", "NO JUNIT"))]
    assert heads[0] == "FAIL (does not gate) rocketmq-5.5.0: INPUT.INPUT-4::test_x.py::test_input-4"
    assert set(heads[1:3]) == {"FAIL ci: test_one::test_broken",
                               "FAIL rocketmq-5.5.0: PULL.PULL-1::test_x.py::test_pull-1"}
    assert heads[3].startswith("NO JUNIT FILE from peers:")
    assert "arithmetic is off" in result.stdout and "PULL-1 (MUST): PULL-1 went wrong" in result.stdout
    assert "POP-11" not in result.stdout and "LPOLL-4" not in result.stdout
    assert lines[-1] == ("failures: 2 gating, 1 not gating, in 6 testcases of 2 JUnit files; "
                         "1 expected file(s) missing")


def test_a_run_whose_only_failure_does_not_gate_passes(tmp_path: Path) -> None:
    (tmp_path / "gate.xml").write_bytes(junit_xml("remoting://x", [_verdict("INPUT-4", "SHOULD", "fail", "failed")]))
    result = _failures(tmp_path, "gate")
    assert result.returncode == 0, result.stdout
    assert result.stdout.splitlines()[-1].startswith("failures: 0 gating, 1 not gating")


def test_a_profiles_should_gates_in_the_junit_file(tmp_path: Path) -> None:
    v = _verdict("INPUT-4", "SHOULD", "fail", "failed")
    v.profile = "strict-input"
    (tmp_path / "gate.xml").write_bytes(junit_xml("remoting://x", [v], ["strict-input"]))
    assert _failures(tmp_path, "gate").returncode == 1


def test_a_file_that_does_not_parse_counts_as_missing_and_no_arguments_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "ci.xml").write_text("<testsuite><testcase")
    result = _failures(tmp_path, "ci")
    assert result.returncode == 1 and "NO JUNIT FILE from ci (its file does not parse:" in result.stdout
    usage = _failures(tmp_path)
    assert usage.returncode == 2 and usage.stderr.startswith("usage: failures.py DIR NAME")


def test_a_peer_that_was_not_gated_is_said_at_the_tail_without_failing_the_run(tmp_path: Path) -> None:
    """A skip whose reason says NOT GATED (the rocketmq-rust gate when its build is not in the cache) is repeated,
    so a log read from its tail shows that the peer has no verdicts; it does not gate."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "test_peer.py").write_text("import pytest\n\n\ndef test_gate():\n"
                                       "    pytest.skip('NOT GATED: the-peer is not built')\n")
    junit = tmp_path / "junit"
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                          f"--junitxml={junit / 'peers.xml'}", str(work / "test_peer.py")],
                         capture_output=True, text=True, cwd=work, timeout=120)
    assert ran.returncode == 0, ran.stdout
    result = _failures(junit, "peers")
    assert result.returncode == 0, result.stdout
    assert "NOT GATED: the-peer is not built (peers: test_gate)" in result.stdout.splitlines()[-2]


def test_a_requirement_not_judged_because_its_setup_failed_gates_as_an_error(tmp_path: Path) -> None:
    (tmp_path / "gate.xml").write_bytes(junit_xml("remoting://x", [_verdict("OFFSET-12", "MUST", "error", "error")]))
    result = _failures(tmp_path, "gate")
    assert result.returncode == 1, result.stdout
    assert "ERROR (not judged: its setup failed) gate: OFFSET.OFFSET-12::test_x.py::test_offset-12" in result.stdout
    assert "OFFSET-12 (MUST) not judged: OFFSET-12 went wrong" in result.stdout
