"""Start ``mqtck broker --remoting 127.0.0.1:0`` as a real server on loopback for one test."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

_ADDRESS = re.compile(r"serving remoting://(\S+?:\d+)")


class RemotingBroker:
    def __init__(self, proc: subprocess.Popen[str], namesrv: str) -> None:
        self.proc = proc
        self.namesrv = namesrv

    @property
    def target(self) -> str:
        return f"remoting://{self.namesrv}"

    def stop(self) -> str:
        self.proc.terminate()
        try:
            _, err = self.proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return err


def start_remoting_broker(data_dir: Path, *flags: str) -> RemotingBroker:
    proc = subprocess.Popen(
        [sys.executable, "-m", "conformance.cli", "broker", "--remoting", "127.0.0.1:0", "--data-dir",
         str(data_dir), *flags],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    m = _ADDRESS.search(line)
    if m is None:
        proc.kill()
        raise AssertionError(f"broker did not start: {line!r} {proc.stderr.read() if proc.stderr else ''}")
    return RemotingBroker(proc, m.group(1))


@pytest.fixture
def remoting_broker(tmp_path: Path) -> Iterator[Callable[..., RemotingBroker]]:
    """A factory: ``remoting_broker(*flags)`` starts a server; every one started is stopped afterwards."""
    started: list[RemotingBroker] = []

    def start(*flags: str) -> RemotingBroker:
        broker = start_remoting_broker(tmp_path / f"broker{len(started)}", *flags)
        started.append(broker)
        return broker

    yield start
    for broker in started:
        err = broker.stop()
        assert "Traceback" not in err, err
