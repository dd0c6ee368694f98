"""Start ``mqtck broker --remoting 127.0.0.1:0`` as a real server on loopback for one test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from conformance.targets.launch import LaunchedBroker, launch_broker


class RemotingBroker:
    def __init__(self, launched: LaunchedBroker) -> None:
        self.launched = launched
        self.proc = launched.proc
        self.namesrv = launched.address

    @property
    def target(self) -> str:
        return f"remoting://{self.namesrv}"

    def stop(self) -> str:
        return self.launched.stop()


def start_remoting_broker(data_dir: Path, *flags: str) -> RemotingBroker:
    return RemotingBroker(launch_broker("remoting", data_dir, *flags))


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
