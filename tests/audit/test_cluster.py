"""``mqtck audit --master spark://…`` on a standalone cluster of two workers on loopback, one of which is
killed with SIGKILL (with its executor) in the middle of the audit: the audit completes, and its findings and
exit code are those of the same audit in local mode."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.audit.spark_cluster import standalone_cluster

pytest.importorskip("pyspark")

#: A small trace with one or two faults of several kinds, so that the findings compared are not all empty.
INJECT = "lost=3,ownership-overlap=2,commit-after-drop=2,never-revived=2,permit-overrun=2,late-poll-return=2"
EVENTS = 60_000
#: How long either audit may take (local here: about 30 s; on the cluster with a lost worker: about 90 s).
AUDIT_TIMEOUT_S = 600


def mqtck(*args: str) -> list[str]:
    return [sys.executable, "-m", "conformance.cli", *args]


def findings(report: Path) -> tuple[int, list[dict], dict]:  # type: ignore[type-arg]
    """(exit code, the findings' rows sorted, the totals) of an audit's report directory."""
    import pyarrow.parquet as pq

    summary = json.loads((report / "summary.json").read_text())
    rows = pq.read_table(report / "findings").to_pylist()
    return summary["exit_code"], sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str)), \
        summary["totals"]


def test_an_audit_on_a_cluster_survives_the_loss_of_a_worker(tmp_path: Path) -> None:
    trace = tmp_path / "trace"
    subprocess.run(mqtck("trace", "synth", "--events", str(EVENTS), "--seed", "3", "--inject", INJECT,
                         "--out", str(trace)), check=True, capture_output=True)
    local = subprocess.run(mqtck("audit", str(trace), "--report-dir", str(tmp_path / "local")),
                           capture_output=True, text=True, timeout=AUDIT_TIMEOUT_S)
    assert local.returncode == 1, local.stderr  # the injected faults break MUSTs

    env = dict(os.environ, MQTCK_PROGRESS_EVERY_S="1", PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    with standalone_cluster(workers=2) as cluster:
        audit = subprocess.Popen(mqtck("audit", str(trace), "--master", cluster.url,
                                       "--report-dir", str(tmp_path / "cluster")),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        progress: list[str] = []
        reader = threading.Thread(target=lambda: progress.extend(audit.stderr), daemon=True)  # type: ignore[arg-type]
        reader.start()
        # Mid-audit: once both workers run an executor of the audit and the audit reported progress.
        deadline = time.monotonic() + AUDIT_TIMEOUT_S
        while not (any("deriving findings" in line for line in progress)
                   and all(w.get("coresused", 0) > 0 for w in cluster.status()["workers"])):
            assert audit.poll() is None, f"the audit ended before a worker could be killed: {progress}"
            assert time.monotonic() < deadline, "the audit never ran on both workers"
            time.sleep(0.2)
        cluster.kill_worker(1)
        assert audit.poll() is None, "the worker was killed after the audit ended"
        audit.communicate(timeout=AUDIT_TIMEOUT_S)
        reader.join(timeout=5)
        assert cluster.alive_workers() == 1
    assert audit.returncode == local.returncode, "".join(progress)[-3000:]
    assert findings(tmp_path / "cluster") == findings(tmp_path / "local")
