"""Run one build tool for a peer (Maven resolving jars, javac compiling a subject, go build building a client) and
turn its failure into one line.

Every tool's failure reaches the user the same way: a PeerError naming the step and the tool's own first error
line, never a traceback or a screen of compiler output, because ``mqtck gate`` prints it as its one-line exit 2.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from conformance.peers import PeerError

#: How much of a tool's error line a PeerError keeps.
ERROR_LINE_CHARS = 300


def first_line(text: str) -> str:
    """The first non-empty line of a tool's output (compilers put the first error first), or ``no output``."""
    return (text.strip().splitlines() or ["no output"])[0][:ERROR_LINE_CHARS]


def run_build(argv: Sequence[str], *, step: str, timeout_s: float, cwd: Path | None = None,
              first_error: Callable[[str], str] = first_line, on_line: Callable[[str], None] | None = None) -> None:
    """Run ``argv``; PeerError ``STEP took more than N s`` on a timeout or ``STEP failed: <first error>`` on a
    non-zero exit, where ``first_error`` picks the line from the tool's stderr followed by its stdout.

    With ``on_line``, each line the tool writes (stdout and stderr together) is handed over as it comes, so that a
    long step (Maven downloading tens of MB) can show its progress instead of being silent until it ends."""
    if on_line is not None:
        _run_streaming(argv, step=step, timeout_s=timeout_s, cwd=cwd, first_error=first_error, on_line=on_line)
        return
    try:
        done = subprocess.run(list(argv), cwd=cwd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise PeerError(f"{step} took more than {timeout_s:g} s") from None
    if done.returncode != 0:
        raise PeerError(f"{step} failed: {first_error(done.stderr + done.stdout)}")


def _run_streaming(argv: Sequence[str], *, step: str, timeout_s: float, cwd: Path | None,
                   first_error: Callable[[str], str], on_line: Callable[[str], None]) -> None:
    lines: list[str] = []
    timed_out = threading.Event()
    with subprocess.Popen(list(argv), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:

        def kill() -> None:
            # Killing the tool closes its pipe, which ends the loop below.
            timed_out.set()
            proc.kill()

        killer = threading.Timer(timeout_s, kill)
        killer.start()
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.append(line)
                on_line(line.rstrip("\n"))
            returncode = proc.wait()
        finally:
            killer.cancel()
    if timed_out.is_set():
        raise PeerError(f"{step} took more than {timeout_s:g} s")
    if returncode != 0:
        raise PeerError(f"{step} failed: {first_error(''.join(lines))}")
