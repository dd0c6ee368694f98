"""``mqtck conform --target grpc``: the reference served with its remoting and gRPC fronts, judged through
``grpc://`` as a RocketMQ 5 proxy is (conformance/targets/launch.py starts it, conform stops it)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("reference.net.grpc.server") is None,
                                reason="the reference's gRPC front (mqtck broker --grpc) is not in this tree")


def test_conform_target_grpc_serves_the_reference_and_judges_it_over_grpc(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "conform", "--target", "grpc", "--only", "POP-1", "POP-10",
         "--report-dir", str(tmp_path), "--json"], capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["target"].startswith("grpc://127.0.0.1:") and "remoting=127.0.0.1:" in summary["target"]
    verdicts = {r["id"]: r["status"] for r in summary["requirements"]}
    assert verdicts["POP-1"] == verdicts["POP-10"] == "pass"
    assert "pull" not in summary["capabilities"] and "pop" in summary["capabilities"]
