"""Real servers on loopback for one test: the body of the ``http_broker`` and ``remoting_broker`` fixtures.

Each fixture is a factory (``http_broker(*flags)``) so a test can start several servers; every one
started is stopped afterwards, and a server that printed a traceback on its way out fails the test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol, TypeVar

from conformance.targets.launch import LaunchedBroker, Transport, launch_broker


class Stoppable(Protocol):
    def stop(self) -> str: ...


S = TypeVar("S", bound=Stoppable)


def launched_servers(
    tmp_path: Path, transport: Transport, wrap: Callable[[LaunchedBroker], S]
) -> Iterator[Callable[..., S]]:
    started: list[S] = []

    def start(*flags: str) -> S:
        server = wrap(launch_broker(transport, tmp_path / f"broker{len(started)}", *flags))
        started.append(server)
        return server

    yield start
    for server in started:
        err = server.stop()
        assert "Traceback" not in err, err
