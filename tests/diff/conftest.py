"""Real servers for the differential tests: ``served("remoting", *flags)`` starts ``mqtck broker`` on loopback
and gives its target address (the serving line's URL); every one started is stopped afterwards."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from conformance.targets.launch import LaunchedBroker
from tests.servers import launched_servers


@pytest.fixture
def remoting_server(tmp_path: Path) -> Iterator[Callable[..., LaunchedBroker]]:
    yield from launched_servers(tmp_path / "remoting", "remoting", lambda launched: launched)


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[Callable[..., LaunchedBroker]]:
    yield from launched_servers(tmp_path / "http", "http", lambda launched: launched)
