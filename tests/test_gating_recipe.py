"""docs/gating.md's recipe for a RocketMQ-protocol broker, followed literally: its shell blocks are run as they
are written, with the reference broker (``mqtck broker --remoting``) in place of the documented placeholder
``start-your-broker``, and the documented outcome is checked: exit 0 and a JUnit file for the CI."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SECTION = "## 4. Gate a RocketMQ-protocol broker (remoting) in CI"
PLACEHOLDER = "start-your-broker"
NAMESRV_LINE = "export NAMESRV=127.0.0.1:9876"


def recipe() -> list[str]:
    """The ``sh`` blocks of the section, in order."""
    text = (ROOT / "docs" / "gating.md").read_text("utf-8")
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)```", section, re.DOTALL)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_recipe_names_one_placeholder_and_the_name_server_it_waits_for() -> None:
    script = "".join(recipe())
    assert script.count(PLACEHOLDER) == 1
    assert script.count(NAMESRV_LINE) == 1
    assert "--junit reports/junit.xml" in script


def test_the_remoting_recipe_runs_as_written_and_passes_with_a_junit_file(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "mqtck").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m conformance.cli "$@"\n')
    (bin_dir / "mqtck").chmod(0o755)
    script = "set -euo pipefail\n" + "".join(recipe())
    script = script.replace(NAMESRV_LINE, f"export NAMESRV=127.0.0.1:{free_port()}")
    script = script.replace(PLACEHOLDER, f'mqtck broker --remoting "$NAMESRV" --data-dir "{tmp_path / "broker"}"')
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(ROOT)}
    log = tmp_path / "recipe.log"
    # Into a file, not a pipe: the broker left running in the background would hold a pipe open.
    with log.open("w") as out:
        proc = subprocess.Popen(["bash", "-c", script], cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            proc.wait(timeout=600)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)  # the broker the recipe left running
    output = log.read_text()
    assert proc.returncode == 0, output[-3000:]
    assert "verdict: PASS" in output
    suite = ET.parse(tmp_path / "reports" / "junit.xml").getroot()
    cases = suite.findall(".//testcase")
    assert cases and not suite.findall(".//failure") and not suite.findall(".//error")
