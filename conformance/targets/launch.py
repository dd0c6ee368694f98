"""Start ``mqtck broker --http|--remoting 127.0.0.1:0`` as a child process and learn its address.

The server prints one line, ``mqtck broker: serving SCHEME://HOST:PORT``, once its sockets listen; port
0 lets the OS pick a free port, so parallel runs never collide. ``grpc`` starts the remoting broker with the
gRPC front beside it (``--remoting 127.0.0.1:0 --grpc 127.0.0.1:0``), which prints a second line for its gRPC
port: the target is then ``grpc://GHOST:GPORT?remoting=HOST:PORT`` (with the remoting line's ``control=``).
Used by the project's HTTP, remoting and interop tests, ``mqtck conform --target grpc`` and ``mqtck bench
conform`` / ``mqtck bench remoting``, so the start-up contract lives in one place.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Literal

#: The line the server prints once it listens, before the URL.
SERVING = "mqtck broker: serving "
#: How long to wait for a server to stop after SIGTERM (it shuts its broker down cleanly) before SIGKILL.
STOP_TIMEOUT_S = 15
#: How long a server may take to print its address (the JVM-free start is about a second; CI machines are slow).
START_TIMEOUT_S = 30.0

Transport = Literal["http", "remoting", "pulsar", "grpc"]


class LaunchedBroker:
    """A running ``mqtck broker`` child process; ``stop()`` ends it and returns its stderr (if piped)."""

    def __init__(self, proc: subprocess.Popen[str], url: str) -> None:
        self.proc = proc
        self.url = url

    @property
    def address(self) -> str:
        """``HOST:PORT`` (for remoting, the name server's; without a ``?control=`` query)."""
        return self.url.split("://", 1)[1].split("?", 1)[0]

    def stop(self) -> str:
        if self.proc.poll() is not None:
            return ""
        self.proc.terminate()
        try:
            _, err = self.proc.communicate(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return err or ""


def launch_broker(
    transport: Transport, data_dir: Path, *flags: str, stderr: int | IO[str] = subprocess.PIPE,
    cwd: Path | None = None, port: int = 0,
) -> LaunchedBroker:
    """Start a server of ``transport`` on a free loopback port (or ``port``: a restart at the same address)
    with its store in ``data_dir`` (extra CLI ``flags``, e.g. ``--sim-clock`` or ``--trace F``); RuntimeError
    with what it said if it does not tell where it serves within START_TIMEOUT_S."""
    fronts = ["--remoting", f"127.0.0.1:{port}", "--grpc", "127.0.0.1:0"] if transport == "grpc" else \
        [f"--{transport}", f"127.0.0.1:{port}"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "conformance.cli", "broker", *fronts, "--data-dir", str(data_dir), *flags],
        stdout=subprocess.PIPE, stderr=stderr, text=True, cwd=cwd,
    )
    schemes = ("remoting", "grpc") if transport == "grpc" else (transport,)
    urls = [_serving_line(proc, transport, scheme) for scheme in schemes]
    if transport == "grpc":
        remoting, _, control = urls[0].removeprefix("remoting://").partition("?")
        return LaunchedBroker(proc, f"{urls[1]}?remoting={remoting}{'&' + control if control else ''}")
    return LaunchedBroker(proc, urls[0])


def _serving_line(proc: subprocess.Popen[str], transport: str, scheme: str) -> str:
    """The URL of the server's next serving line, which must be ``scheme``'s; RuntimeError with what it said if
    it does not say so within START_TIMEOUT_S."""
    assert proc.stdout is not None
    first: list[str] = []
    reader = threading.Thread(target=lambda: first.append(proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(START_TIMEOUT_S)
    line = first[0] if first else ""
    if not line.startswith(f"{SERVING}{scheme}://"):
        proc.kill()
        _, err = proc.communicate()
        raise RuntimeError(f"mqtck broker --{transport} did not start: {line!r} {err or ''}")
    return line.strip().removeprefix(SERVING)

