"""Start ``mqtck broker --http`` as a real server on loopback for the duration of a test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from conformance.targets.launch import LaunchedBroker
from tests.servers import launched_servers


class HttpBroker:
    """A launched server and an HTTP client on it."""

    def __init__(self, launched: LaunchedBroker) -> None:
        self.launched = launched
        self.url = launched.url
        self.http = httpx.Client(base_url=self.url, timeout=30)

    def stop(self) -> str:
        self.http.close()
        return self.launched.stop()


@pytest.fixture
def http_broker(tmp_path: Path) -> Iterator[Callable[..., HttpBroker]]:
    """A factory: ``http_broker(*flags)`` starts a server; every one started is stopped afterwards."""
    yield from launched_servers(tmp_path, "http", HttpBroker)
