"""``mqtck record`` as a child process, the way a user runs it: started in front of a name server, stopped with
SIGTERM, its JSON summary read back. What the recorder's benchmark and its tests share."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

#: How long the recorder may take to say it listens, and to end after SIGTERM.
START_STOP_TIMEOUT_S = 30.0


class RecorderError(RuntimeError):
    """The recorder did not start, or did not end cleanly; the message says what it printed."""


class RecorderProcess:
    """``mqtck record --listen 127.0.0.1:0 --upstream UPSTREAM --trace TRACE``; :attr:`front` is where clients
    find the name server through it."""

    def __init__(self, upstream: str, trace: Path, run: str | None = None) -> None:
        argv = [sys.executable, "-m", "conformance.cli", "record", "--listen", "127.0.0.1:0", "--upstream", upstream,
                "--trace", str(trace)]
        self.proc = subprocess.Popen([*argv, *(["--run", run] if run else [])], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # "recording remoting://HOST:PORT -> ... into ..."
        if not line.startswith("recording remoting://"):
            _, err = self.proc.communicate(timeout=START_STOP_TIMEOUT_S)
            raise RecorderError(f"mqtck record did not start: {line.strip() or err.strip()}")
        self.front = line.split()[1].removeprefix("remoting://")

    def stop(self) -> dict[str, Any]:
        """SIGTERM; the summary it printed (rows by event, frames passed on unrecorded, malformed frames)."""
        self.proc.send_signal(signal.SIGTERM)
        out, err = self.proc.communicate(timeout=START_STOP_TIMEOUT_S)
        if self.proc.returncode != 0 or "Traceback" in err:
            raise RecorderError(f"mqtck record ended with {self.proc.returncode}: {err.strip()[-2000:]}")
        return json.loads(out)
