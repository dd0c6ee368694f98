"""A strategy under test that is a program speaking the exec protocol (:mod:`.protocol`).

One process serves the whole run (starting a JVM per request would make a check take hours). A
batch of requests is written while answers are read, through non-blocking pipes, so neither side can
block the other on a full pipe, and a program that dies, hangs or answers garbage is reported as a
:class:`~.protocol.ProtocolError` naming the request it was working on.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shlex
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence

from conformance.strategy.model import Outcome, Request
from conformance.strategy.protocol import ProtocolError, RequestEncoder, decode_response

#: Seconds a program may take to answer one request (counted from the previous answer).
DEFAULT_TIMEOUT = 10.0
#: Seconds a program gets to exit after its stdin is closed, before it is killed.
CLOSE_GRACE = 2.0
#: Bytes written to the program's stdin per system call.
WRITE_CHUNK = 1 << 16
#: Bytes read from its stdout per system call.
READ_CHUNK = 1 << 16
#: Characters of the program's last stderr line quoted when it dies.
STDERR_QUOTE = 160


class ExecStrategyUnderTest:
    """``command`` is a shell command line (str) or an argv list."""

    def __init__(
        self,
        command: str | Sequence[str],
        timeout: float = DEFAULT_TIMEOUT,
        env: Mapping[str, str] | None = None,
        label: str | None = None,
    ) -> None:
        self.command = command
        self.timeout = timeout
        self.env = dict(env) if env is not None else None
        self.label = label or (command if isinstance(command, str) else shlex.join(command))
        self.requests_sent = 0
        self._proc: subprocess.Popen[bytes] | None = None
        # Kept open for the life of the strategy (closed in close()): the program's stderr goes
        # here, so a chatty program cannot block on a full pipe and a crash can be explained.
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115
        self._encoder = RequestEncoder()
        self._pending = b""

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is None:
            try:
                self._proc = subprocess.Popen(
                    self.command,
                    shell=isinstance(self.command, str),
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=self._stderr,
                    env=self.env,
                    start_new_session=True,  # its own process group, so close() can end all of it
                )
            except OSError as exc:
                raise ProtocolError(f"cannot start {self.label!r}: {exc}") from None
            assert self._proc.stdin is not None and self._proc.stdout is not None
            os.set_blocking(self._proc.stdin.fileno(), False)
            os.set_blocking(self._proc.stdout.fileno(), False)
        return self._proc

    def allocate_many(self, requests: Sequence[Request]) -> list[Outcome]:
        if not requests:
            return []
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        first = self.requests_sent + 1
        self.requests_sent += len(requests)
        payload = b"".join(self._encoder.encode(r) for r in requests)
        written = 0
        answers: list[Outcome] = []
        deadline = time.monotonic() + self.timeout
        with selectors.DefaultSelector() as selector:
            selector.register(proc.stdout, selectors.EVENT_READ)
            selector.register(proc.stdin, selectors.EVENT_WRITE)
            while len(answers) < len(requests):
                number = first + len(answers)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self._kill()
                    raise ProtocolError(
                        f"{self.label!r} did not answer request #{number} "
                        f"({requests[len(answers)].describe()}) within {self.timeout:g} s"
                    )
                for key, _ in selector.select(remaining):
                    if key.fileobj is proc.stdin:
                        try:
                            written += os.write(proc.stdin.fileno(), payload[written : written + WRITE_CHUNK])
                        except BrokenPipeError:
                            raise self._died(number, requests[len(answers)]) from None
                        if written == len(payload):
                            selector.unregister(proc.stdin)
                        continue
                    chunk = os.read(proc.stdout.fileno(), READ_CHUNK)
                    if not chunk:
                        raise self._died(number, requests[len(answers)])
                    self._pending += chunk
                    while b"\n" in self._pending and len(answers) < len(requests):
                        line, self._pending = self._pending.split(b"\n", 1)
                        answers.append(decode_response(line, first + len(answers), requests[len(answers)]))
                        deadline = time.monotonic() + self.timeout
        return answers

    def _died(self, number: int, request: Request) -> ProtocolError:
        proc = self._proc
        assert proc is not None
        try:
            code = proc.wait(CLOSE_GRACE)
        except subprocess.TimeoutExpired:
            self._kill()
            return ProtocolError(f"{self.label!r} closed its output before answering request #{number} "
                                 f"({request.describe()})")
        self._stderr.seek(0)
        lines = [ln for ln in self._stderr.read().decode("utf-8", "replace").splitlines() if ln.strip()]
        tail = f"; last stderr line: {lines[-1].strip()[:STDERR_QUOTE]}" if lines else ""
        return ProtocolError(
            f"{self.label!r} exited with code {code} before answering request #{number} "
            f"({request.describe()}){tail}"
        )

    def twin(self) -> ExecStrategyUnderTest:
        """A second instance of the same program, for the cross-process determinism check."""
        return ExecStrategyUnderTest(self.command, self.timeout, self.env, f"{self.label} (twin process)")

    def _kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait()

    def close(self) -> None:
        """Close stdin (a well-behaved program then exits), and kill it if it does not."""
        proc, self._proc = self._proc, None
        if proc is not None:
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.close()
                proc.wait(CLOSE_GRACE)
            except (OSError, subprocess.TimeoutExpired):
                pass
            self._proc = proc
            self._kill()
            self._proc = None
            proc.stdout.close()
        self._stderr.close()
