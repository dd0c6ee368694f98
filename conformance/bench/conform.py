"""``mqtck bench conform``: wall time of the whole conformance suite, in-process and over HTTP.

Goals (issue 6; timing goals live in benches, not tests): the suite on the embedded reference in at
most 60 s with two workers, and against ``mqtck broker --http --sim-clock`` in at most 120 s (one
worker: the tests move the server's one simulated clock). Each run is a real ``mqtck conform``
process; the HTTP one also starts and stops the server.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from conformance.targets.launch import launch_broker

HELP = "wall time of mqtck conform on the reference (-n 2) and over HTTP (goals: 60 s and 120 s)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workers", type=int, default=2, help="pytest workers for the in-process run (default 2)")
    p.add_argument("--skip-http", action="store_true", help="only the in-process run")


def _conform(target: str, workers: int, report_dir: Path) -> dict[str, Any]:
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "conform", "--target", target, "-n", str(workers),
         "--report-dir", str(report_dir), "--json"],
        capture_output=True, text=True, timeout=1_800,
    )
    wall = time.perf_counter() - started
    doc = json.loads(proc.stdout) if proc.returncode in (0, 1) else {}
    return {"target": target, "workers": workers, "wall_s": round(wall, 2), "exit": proc.returncode,
            "verdict": doc.get("verdict"), "tests": doc.get("tests", {}).get("total")}


def run(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"params": {"workers": args.workers, "http": not args.skip_http}}
    with tempfile.TemporaryDirectory(prefix="mqtck-bench-conform-") as tmp:
        out["reference"] = _conform("reference", args.workers, Path(tmp) / "ref")
        out["reference"]["goal_s"] = 60
        if not args.skip_http:
            server = launch_broker("http", Path(tmp) / "broker", "--sim-clock", "--segment-bytes", "65536")
            try:
                out["http"] = _conform(server.url, 1, Path(tmp) / "http")
                out["http"]["goal_s"] = 120
            finally:
                server.stop()
    return out
