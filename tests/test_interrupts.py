"""Ctrl-C means one thing for every long command: exit 130 and the one line ``mqtck COMMAND: interrupted`` on
stderr, never a traceback and never the usage-error code 2, whatever the command was running when the signal
came (the suite's pytest, Spark and its JVM, Hypothesis, a Java child). The servers are the exception: Ctrl-C is
how they are stopped (exit 0).

Each test starts the command as a terminal would (its own process group), waits until a line shows it is really
working, and sends SIGINT to the whole group, as Ctrl-C does: the JVM of an audit and the children of a gate get
it too. Nothing is timed: the tests wait for lines, not for seconds.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conformance.progress import EVERY_ENV

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "traces"
#: Generous: a command stops within a second or two of SIGINT; this only keeps a hung one from hanging the suite.
STOP_TIMEOUT_S = 120


def interrupt(marker: str, *args: str, cwd: Path, marker_on: str = "stderr") -> tuple[int, str, str]:
    """Run ``mqtck ARGS``, send its process group SIGINT once a line of ``marker_on`` matches ``marker``; the exit
    code, what stderr said from the SIGINT on, and all of stderr."""
    env = {**os.environ, EVERY_ENV: "0"}  # a progress line per event: the marker shows as soon as the work does
    proc = subprocess.Popen([sys.executable, "-m", "conformance.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=cwd, start_new_session=True)
    watched, other = (proc.stderr, proc.stdout) if marker_on == "stderr" else (proc.stdout, proc.stderr)
    assert watched is not None and other is not None
    other_text: list[str] = []
    drain = threading.Thread(target=lambda: other_text.append(other.read()), daemon=True)
    drain.start()
    seen: list[str] = []
    try:
        for line in watched:
            seen.append(line)
            if re.search(marker, line):
                break
        else:
            pytest.fail(f"mqtck {' '.join(args)} ended (exit {proc.wait()}) before {marker!r}: {''.join(seen)[-2000:]}")
        os.killpg(proc.pid, signal.SIGINT)
        rest = watched.read()
        code = proc.wait(timeout=STOP_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    drain.join(timeout=STOP_TIMEOUT_S)
    stderr_all = "".join(seen) + rest if marker_on == "stderr" else "".join(other_text)
    after = rest if marker_on == "stderr" else "".join(other_text)
    return code, after, stderr_all


def assert_interrupted(command: str, code: int, after: str, stderr: str) -> None:
    """Exit 130; after the SIGINT, at most progress lines still in flight and then the one line; no traceback."""
    assert code == 130, (code, stderr[-3000:])
    assert "Traceback" not in stderr and "Error" not in after, stderr[-3000:]
    lines = after.strip().splitlines()
    assert lines and lines[-1] == f"mqtck {command}: interrupted", after
    assert all(line.startswith(f"mqtck {command}: ") and ": error:" not in line for line in lines), after


@pytest.mark.slow
def test_conform_interrupted_during_the_tests_is_130(tmp_path) -> None:
    """pytest answers a Ctrl-C with its exit code 2 (INTERRUPTED), which conform used to report as 'the suite
    could not run', the usage-error code."""
    code, after, stderr = interrupt(r"conformance tests \d+/", "conform", "--report-dir", str(tmp_path / "r"),
                                    cwd=tmp_path)
    assert_interrupted("conform", code, after, stderr)


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("java") and shutil.which("mvn")), reason="needs java and mvn")
def test_gate_interrupted_while_its_java_peer_runs_is_130(tmp_path) -> None:
    """The one gate cheap enough for a test: the Java strategies (no broker to start), interrupted once the first
    strategy's verdict is in and the next one's JVM runs. A broker's gate runs its suite through conform
    (``conform(ConformOptions)``), whose interrupt the test above covers."""
    from conformance.peers import PeerError
    from conformance.peers.maven import client_classpath

    try:
        client_classpath("4.9.8")  # resolved (and cached) first: the gate then starts its Java strategies at once
    except PeerError as exc:  # the registry is out of reach: nothing to interrupt
        pytest.skip(f"rocketmq-client 4.9.8 could not be resolved: {exc}")
    code, after, stderr = interrupt(r"mqtck gate: AllocateMessageQueue\w+: golden", "gate", "java-strategies-4.9.8",
                                    "--report-dir", str(tmp_path / "r"), cwd=tmp_path)
    assert_interrupted("gate", code, after, stderr)


@pytest.mark.slow
@pytest.mark.parametrize("phase", ["reading the trace", "planning the derivations", "deriving findings"])
def test_audit_interrupted_during_spark_is_130(tmp_path, phase: str) -> None:
    """A terminal's Ctrl-C stops the driver's JVM too: PySpark's handler, py4j's logged tracebacks and the read
    errors of a dead JVM (which used to make it exit 2) must all give way to the one line."""
    pytest.importorskip("pyspark")
    code, after, stderr = interrupt(re.escape(phase), "audit", str(FIXTURES / "messages.jsonl"),
                                    "--report-dir", str(tmp_path / "r"), cwd=tmp_path)
    assert_interrupted("audit", code, after, stderr)
    assert "class archive" not in stderr  # an interrupted driver writes no archive on its way out


@pytest.mark.slow
def test_diff_interrupted_while_searching_is_130(tmp_path) -> None:
    code, after, stderr = interrupt(r"searching: 3/", "diff", "--target", "reference", "--examples", "2000",
                                    "--report-dir", str(tmp_path / "d"), cwd=tmp_path)
    assert_interrupted("diff", code, after, stderr)


@pytest.mark.slow
def test_strategy_check_interrupted_is_130(tmp_path) -> None:
    code, after, stderr = interrupt(r"mqtck strategy check: ", "strategy", "check", "averagely",
                                    "--examples", "100000", cwd=tmp_path)
    assert_interrupted("strategy", code, after, stderr)


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["--http", "--remoting", "--grpc"])
def test_a_server_stopped_by_ctrl_c_ends_normally(tmp_path, transport: str) -> None:
    """Ctrl-C is how a server is stopped: exit 0 and nothing on stderr, on every transport alike."""
    code, after, stderr = interrupt(r"mqtck broker: serving", "broker", transport, "0", "--data-dir",
                                    str(tmp_path / "b"), cwd=tmp_path, marker_on="stdout")
    assert code == 0, stderr
    assert "interrupted" not in stderr and "Traceback" not in stderr, stderr
