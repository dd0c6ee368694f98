"""Start ``mqtck broker --http`` as a real server on loopback for the duration of a test module."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

#: How long a server may take to print its address (a cold Python import of FastAPI is ~1 s).
START_TIMEOUT_S = 30


class HttpBroker:
    def __init__(self, proc: subprocess.Popen[str], url: str) -> None:
        self.proc = proc
        self.url = url
        self.http = httpx.Client(base_url=url, timeout=30)

    def stop(self) -> str:
        self.http.close()
        self.proc.terminate()
        try:
            _, err = self.proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return err


def start_broker(data_dir: Path, *flags: str) -> HttpBroker:
    proc = subprocess.Popen(
        [sys.executable, "-m", "conformance.cli", "broker", "--http", "127.0.0.1:0", "--data-dir", str(data_dir),
         *flags],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "serving http://" not in line:
        proc.kill()
        raise AssertionError(f"broker did not start: {line!r} {proc.stderr.read() if proc.stderr else ''}")
    return HttpBroker(proc, line.strip().rsplit(" ", 1)[-1])


@pytest.fixture
def http_broker(tmp_path: Path) -> Iterator[Callable[..., HttpBroker]]:
    """A factory: ``http_broker(*flags)`` starts a server; every one started is stopped afterwards."""
    started: list[HttpBroker] = []

    def start(*flags: str) -> HttpBroker:
        broker = start_broker(tmp_path / f"broker{len(started)}", *flags)
        started.append(broker)
        return broker

    yield start
    for broker in started:
        err = broker.stop()
        assert "Traceback" not in err, err
