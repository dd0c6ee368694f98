"""The official RocketMQ 5 (gRPC, POP) consumers through the POP client check, as ``mqtck gate`` runs them: the
Java client (rocketmq-client-java 5.2.0 from Maven Central) and the Go client (rocketmq-clients/golang/v5 v5.1.2
from the Go module proxy, built with go build), against the reference broker's gRPC front, every scenario, with
their reviewed expectations (the Python client's gate is tests/v5/test_pop_client_python.py, in the interop-v5
env where its package is). The verdicts asserted are the ones observed and reviewed; a change in any of them fails
here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ALL_PASS = {f"PCLIENT-{n}": "pass" for n in range(1, 11)}
#: What each client gets, requirement by requirement. The Go client has no PushConsumer (push-retry and
#: push-killed are not applicable), and never sends NotifyClientTermination (PCLIENT-7, reviewed; so PCLIENT-8 has
#: no evidence).
VERDICTS = {
    "java-client-v5-5.2.0": ALL_PASS,
    "go-client-v5-5.1.2": {**ALL_PASS, "PCLIENT-4": "not-applicable", "PCLIENT-7": "expected-fail",
                           "PCLIENT-8": "not-applicable", "PCLIENT-9": "not-applicable",
                           "PCLIENT-10": "not-applicable"},
}


def assert_gate_verdicts(peer: str, tmp_path: Path, expected: dict[str, str]) -> dict[str, object]:
    """``mqtck gate PEER`` exits 0 with the reviewed verdicts and its reports written; its summary."""
    result = subprocess.run([sys.executable, "-m", "conformance.cli", "gate", peer, "--report-dir", str(tmp_path),
                             "--json"], capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    doc = json.loads(result.stdout)
    assert doc["implementation"] == peer
    status = {r["id"]: r["status"] for r in doc["requirements"]}
    assert status == expected, status
    run = tmp_path / "latest"
    assert {"summary.json", "junit.xml", "report.html", "trace.jsonl", "simple-retry.0.out"} <= {
        p.name for p in run.iterdir()}
    return doc


@pytest.mark.req(*ALL_PASS)
@pytest.mark.parametrize("peer", sorted(VERDICTS))
def test_the_v5_consumers_verdicts(peer: str, tmp_path: Path) -> None:
    doc = assert_gate_verdicts(peer, tmp_path, VERDICTS[peer])
    if VERDICTS[peer]["PCLIENT-9"] == "pass":
        # The killed consumer held messages, and they came back once the 60 s invisible time had passed.
        observed = doc["observations"]
        assert isinstance(observed, dict)
        assert min(observed["client.push-killed.came_back_after_s"]) >= 60
