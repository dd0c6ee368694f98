"""Start ``mqtck broker --remoting 127.0.0.1:0`` as a real server on loopback for one test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from conformance.targets.launch import LaunchedBroker
from tests.servers import launched_servers


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


@pytest.fixture
def remoting_broker(tmp_path: Path) -> Iterator[Callable[..., RemotingBroker]]:
    """A factory: ``remoting_broker(*flags)`` starts a server; every one started is stopped afterwards."""
    yield from launched_servers(tmp_path, "remoting", RemotingBroker)
