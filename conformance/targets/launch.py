"""Start ``mqtck broker --http 127.0.0.1:0`` as a child process and learn its address.

The server prints one line, ``mqtck broker: serving http://HOST:PORT``, once its socket listens; port
0 lets the OS pick a free port, so parallel runs never collide. Used by the project's HTTP tests and
by ``mqtck bench conform``, so the start-up contract lives in one place.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

#: The line the server prints once it listens, before the URL.
SERVING = "mqtck broker: serving "
#: How long to wait for a server to stop after SIGTERM (it shuts its broker down cleanly) before SIGKILL.
STOP_TIMEOUT_S = 15


class LaunchedBroker:
    """A running ``mqtck broker --http`` child process; ``stop()`` ends it and returns its stderr."""

    def __init__(self, proc: subprocess.Popen[str], url: str) -> None:
        self.proc = proc
        self.url = url

    def stop(self) -> str:
        self.proc.terminate()
        try:
            _, err = self.proc.communicate(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return err or ""


def launch_http_broker(data_dir: Path, *flags: str) -> LaunchedBroker:
    """Start a server on a free loopback port with its store in ``data_dir`` (extra CLI ``flags``, e.g.
    ``--sim-clock``); RuntimeError with the server's stderr if it does not say where it serves."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "conformance.cli", "broker", "--http", "127.0.0.1:0", "--data-dir", str(data_dir),
         *flags],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith(SERVING):
        proc.kill()
        _, err = proc.communicate()
        raise RuntimeError(f"mqtck broker --http did not start: {line!r} {err}")
    return LaunchedBroker(proc, line.strip().removeprefix(SERVING))
