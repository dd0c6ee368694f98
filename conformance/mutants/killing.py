"""Mutation testing: run the conformance suite against each seeded fault of the catalogue and count the kills.

A fault is *killed* when the suite, run against ``mutant:NAME``, fails at least one requirement: a MUST, or
a SHOULD (the reference passes every SHOULD, so a SHOULD that fails is the fault showing; PACK-9's fault is
one a real broker has, and breaks a SHOULD only). Each run is
a separate ``mqtck conform`` process (a fresh interpreter: the suite's modules and the fault's
classes do not leak between runs), ``workers`` of them at a time. The result goes into the main
run's ``summary.json`` and report under ``mutants``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from rich.console import Console

from conformance.mutants import CATALOGUE
from conformance.progress import Ticker

#: One fault's suite run may not take longer than this (the suite on the reference takes seconds).
RUN_TIMEOUT_S = 600


def run_one(name: str, report_dir: Path) -> dict[str, Any]:

    mutant = CATALOGUE[name]
    proc = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "conform", "--target", f"mutant:{name}", "--report-dir",
         str(report_dir / name), "--json"],
        capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
    )
    failed: list[str] = []
    if proc.returncode in (0, 1):
        doc = json.loads(proc.stdout)
        failed = [r["id"] for r in doc["requirements"] if r["status"] == "fail"]
    return {
        "name": name, "family": mutant.family, "breaks": list(mutant.breaks), "description": mutant.description,
        "killed": bool(failed), "failed_requirements": failed,
        "expected_caught": sorted(set(mutant.breaks) & set(failed)),
        "error": proc.stderr.strip()[-500:] if proc.returncode not in (0, 1) else "",
    }


def run_catalogue(names: list[str], report_dir: Path, workers: int, console: Console, quiet: bool) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    with Ticker("conform", "seeded faults", quiet=quiet, console=console) as ticker:
        ticker.total(len(names))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for name, result in zip(names, pool.map(lambda n: run_one(n, report_dir), names), strict=True):
                results.append(result)
                ticker.advance(name)
    killed = sum(r["killed"] for r in results)
    return {"total": len(results), "killed": killed, "kill_rate": killed / len(results) if results else 1.0,
            "results": results}
