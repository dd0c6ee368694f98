"""The wheel works outside the checkout: built from this tree, installed into a fresh virtualenv, run in an empty
directory (no ``conformance/`` or ``fixtures/`` beside it), it does the three jobs.

The wheel is built with ``python -m build`` (an isolated build environment from the package index, as a packager's
would be); its dependencies come from the package index or pip's cache, as a user's would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
#: Installing the dependencies (pyspark is ~300 MB) may take minutes on a cold cache.
INSTALL_TIMEOUT_S = 1_200


def _run(cmd: list[str], cwd: Path, timeout: float = 600, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    assert result.returncode == 0, (
        f"{' '.join(cmd)}: exit {result.returncode}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return result.stdout


def test_the_wheel_installed_in_a_fresh_venv_does_the_three_jobs_in_an_empty_directory(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(ROOT)], tmp_path,
         timeout=INSTALL_TIMEOUT_S)
    (wheel,) = dist.glob("mqtck-*.whl")
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "-q", f"{wheel}[spark]"], tmp_path, timeout=INSTALL_TIMEOUT_S)
    empty = tmp_path / "empty"
    empty.mkdir()
    mqtck = str(env_dir / "bin" / "mqtck")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}"

    assert _run([mqtck, "--version"], empty, env=env).strip() == f"mqtck {wheel.name.split('-')[1]}"
    # Job 1: the conformance suite against the embedded reference, reports written here.
    _run([mqtck, "conform", "--report-dir", "reports", "-n", "2", "--json"], empty, env=env)
    summary = json.loads((empty / "reports" / "latest" / "summary.json").read_text())
    assert summary["verdict"] == "pass" and summary["counts"]["pass"] > 50, summary["counts"]
    # Job 2: a strategy's properties.
    out = _run([mqtck, "strategy", "check", "averagely", "--examples", "50"], empty, env=env)
    assert "all declared properties hold" in " ".join(out.split())
    # Job 3: a synthesized trace with one injected fault, audited on local Spark.
    _run([mqtck, "trace", "synth", "--events", "3000", "--inject", "lost=1", "--out", "trace"], empty, env=env)
    audit = subprocess.run([mqtck, "audit", "trace", "--report-dir", "audit"], cwd=empty, capture_output=True,
                           text=True, timeout=900, env=env)
    assert audit.returncode == 1, audit.stdout[-3000:] + audit.stderr[-3000:]  # the injected loss is a MUST
    found = json.loads((empty / "audit" / "summary.json").read_text())
    assert found and (empty / "audit" / "report.html").is_file()
    assert not (empty / "conformance").exists() and not (empty / "fixtures").exists()
