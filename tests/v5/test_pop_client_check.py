"""The POP client check end to end against the reference's gRPC front, with the tiny v5 client of
tests/v5/mini_v5_client.py: well-behaved it passes through ``mqtck conform --client ... --client-protocol grpc``,
and each fault on purpose fails the requirement it breaks and no other. The official clients are judged in
tests/peers/test_v5_client_peers.py and tests/v5/test_pop_client_python.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.client_check.pop_harness import PopOptions, run_pop_client_check

MINI = f"{sys.executable} {Path(__file__).with_name('mini_v5_client.py')}"
SIMPLE = ("PCLIENT-1", "PCLIENT-2", "PCLIENT-3", "PCLIENT-5", "PCLIENT-6", "PCLIENT-7", "PCLIENT-8")


@pytest.mark.req(*SIMPLE)
def test_a_well_behaved_client_passes_the_command(tmp_path: Path) -> None:
    """Reports written, exit 0; the push scenario is not applicable to a client without a PushConsumer."""
    result = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "conform", "--client", MINI, "--client-protocol", "grpc",
         "--client-scenarios", "simple-retry", "push-retry", "--report-dir", str(tmp_path), "--json"],
        capture_output=True, text=True, timeout=180,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    doc = json.loads(result.stdout)
    status = {r["id"]: r["status"] for r in doc["requirements"]}
    assert status == {**dict.fromkeys(SIMPLE, "pass"), "PCLIENT-4": "not-applicable",
                      "PCLIENT-9": "not-covered", "PCLIENT-10": "not-covered"}
    assert {"summary.json", "junit.xml", "report.html", "trace.jsonl", "simple-retry.0.out"} <= {
        p.name for p in (tmp_path / "latest").iterdir()}


@pytest.mark.req(*SIMPLE)
@pytest.mark.parametrize(("fault", "fails"), [
    ("ack-failures", {"PCLIENT-2", "PCLIENT-3"}),
    ("skip-ack", {"PCLIENT-1"}),
    ("forged-handle", {"PCLIENT-5"}),
    ("old-handle", {"PCLIENT-1", "PCLIENT-6"}),
    ("no-goodbye", {"PCLIENT-7"}),
])
def test_each_fault_fails_what_it_breaks(fault: str, fails: set[str], tmp_path: Path) -> None:
    results = run_pop_client_check(PopOptions(f"{MINI} --fault {fault}", ("simple-retry",)), tmp_path)
    failed = {r.reqs[0] for r in results if r.outcome == "failed"}
    assert failed == fails, [(r.reqs[0], r.outcome, r.message) for r in results]
