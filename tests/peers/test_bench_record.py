"""``mqtck bench record`` (issue 18's recorder overhead): the Java client's load, direct and through ``mqtck record``,
on a short run against the reference broker. The figures are the bench's; this test holds what must be true of any
run: every message sent and consumed both ways, and the recorder wrote one SEND row per message sent through it,
decoded every frame and left the clients' traffic whole."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

MESSAGES = 2_000


def test_the_recorder_sees_every_send_and_loses_nothing(tmp_path: Path) -> None:
    out = tmp_path / "record.json"
    run = subprocess.run([sys.executable, "-m", "conformance.cli", "bench", "record", "--peer", "reference",
                          "--messages", str(MESSAGES), "--threads", "4", "--rounds", "1", "--out", str(out)],
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(out.read_text())["result"]
    for path, run_result in result["rounds"][0].items():
        assert run_result["send_failures"] == 0, path
        assert run_result["consumed"] == MESSAGES + 1, f"{path}: the probe's warm message and the run's"
    recorder = result["recorder"]
    assert recorder["rows_by_event"]["SEND"] == MESSAGES + 1
    assert recorder["rows_by_event"]["PULL_RESP"] >= 1 and recorder["malformed_frames"] == 0
    assert set(result["ratio"]) == {"produce", "consume"} and all(r > 0 for r in result["ratio"].values())
