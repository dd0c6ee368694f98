"""schemathesis against the HTTP front: every default check plus the rest, stateful links included.

Bounded here (``MQTCK_FUZZ_EXAMPLES``, default 25 per operation); ``tox -e fuzz`` runs it deep. The
server runs on the real clock with short polling, so a held pull lasts at most about two seconds
(a simulated clock would hold it for ever: nothing advances it during fuzzing).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.fuzz


def test_schemathesis_finds_no_failure(http_broker, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server = http_broker("--short-polling")
    examples = os.environ.get("MQTCK_FUZZ_EXAMPLES", "25")
    cmd = [
        sys.executable, "-m", "schemathesis.cli", "run", f"{server.url}/openapi.json", "--checks", "all",
        "--max-examples", examples, "--workers", "1", "--request-timeout", "15", "--seed", "20261122",
        "--report", "junit", "--report-dir", str(tmp_path / "st"),
    ]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=3_000, cwd=tmp_path)
    tail = "\n".join(result.stdout.splitlines()[-40:])
    print(tail)
    assert result.returncode == 0, tail
    assert "No issues found" in result.stdout, tail
