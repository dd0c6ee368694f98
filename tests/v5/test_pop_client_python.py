"""The official RocketMQ 5 Python client (PyPI rocketmq-python-client 5.1.2) through the POP client check, as
``mqtck gate python-client-v5-5.1.2`` runs it against the reference broker's gRPC front: its SimpleConsumer and
PushConsumer, a failure retried, a consumer killed while it holds messages. Only the interop-v5 tox env installs
the package (its top-level ``rocketmq`` is also the RocketMQ 4 binding's); elsewhere this file is skipped."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.peers.clients_v5 import python_client_installed

# Not importorskip: importing the client registers its protos in protobuf's default pool, as the reference's do.
pytestmark = pytest.mark.skipif(not python_client_installed(),
                                reason="rocketmq-python-client is installed by the interop-v5 tox env only")

ALL = tuple(f"PCLIENT-{n}" for n in range(1, 11))


@pytest.mark.req(*ALL)
def test_the_python_v5_consumers_verdicts(tmp_path: Path) -> None:
    """Every requirement passes (observed and reviewed), the killed consumer's messages came back after their
    60 s invisible time, and the reports are written."""
    result = subprocess.run([sys.executable, "-m", "conformance.cli", "gate", "python-client-v5-5.1.2",
                             "--report-dir", str(tmp_path), "--json"], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    doc = json.loads(result.stdout)
    assert {r["id"]: r["status"] for r in doc["requirements"]} == dict.fromkeys(ALL, "pass")
    assert min(doc["observations"]["client.push-killed.came_back_after_s"]) >= 60
    assert {"summary.json", "junit.xml", "report.html", "trace.jsonl", "push-killed.0.out", "push-killed.1.out"} <= {
        p.name for p in (tmp_path / "latest").iterdir()}
