"""``mqtck bench record`` (issue 18's recorder overhead): the Java client's load, direct and through ``mqtck record``,
on a short run against the reference broker. The figures are the bench's; this test holds what must be true of any
run: every message sent and consumed both ways, and the recorder wrote one SEND row per message sent through it,
decoded every frame and left the clients' traffic whole."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

MESSAGES = 2_000


def test_the_recorder_sees_every_send_and_loses_nothing(tmp_path: Path) -> None:
    out = tmp_path / "record.json"
    run = subprocess.run([sys.executable, "-m", "conformance.cli", "bench", "record", "--peer", "reference",
                          "--messages", str(MESSAGES), "--threads", "4", "--rounds", "1", "--out", str(out)],
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(out.read_text())["result"]
    for path, run_result in result["rounds"][0].items():
        assert run_result["send_failures"] == 0, path
        assert run_result["consumed"] == MESSAGES + 1, f"{path}: the probe's warm message and the run's"
    recorder = result["recorder"]
    assert recorder["rows_by_event"]["SEND"] == MESSAGES + 1
    assert recorder["rows_by_event"]["PULL_RESP"] >= 1 and recorder["malformed_frames"] == 0
    assert set(result["ratio"]) == {"produce", "consume"} and all(r > 0 for r in result["ratio"].values())


def test_a_probe_whose_first_send_fails_ends_with_the_clients_error(tmp_path: Path) -> None:
    """The probe's warm send to a name server that is not there fails: the probe exits 1 with the client's error.
    It used to let the exception out of main, where the client's non-daemon threads kept the JVM (and a CI run's
    warm-up) waiting until the caller's timeout."""
    import argparse

    from conformance.bench.record import CLIENT_VERSION, PROBE, _probe
    from conformance.peers.java import java_program
    from conformance.peers.maven import client_classpath

    program = java_program(PROBE, client_classpath(CLIENT_VERSION), "the throughput probe")
    with pytest.raises(RuntimeError, match=r"the throughput probe failed \(exit 1\): \S*Exception"):
        _probe(program, "127.0.0.1:1", "Unreachable", 10, argparse.Namespace(threads=2, body_bytes=16), tmp_path)
