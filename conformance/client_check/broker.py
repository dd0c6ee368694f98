"""The reference remoting broker on a background asyncio thread, recording its trace in memory.

Client conformance needs the broker in-process: the harness prepares scenarios through the core directly
(create topics, store messages, preset a group's offset) and judges from the trace rows, with no admin
protocol in between. Everything that touches the broker runs on its loop (:meth:`BrokerThread.call`), so
the broker stays single-threaded as in ``mqtck broker``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from reference.broker.broker import Broker
from reference.broker.config import BrokerConfig
from reference.broker.host import BrokerHost
from reference.clock import RealClock
from reference.net.remoting.server import RemotingServers, start_remoting
from reference.trace import MemorySink, Trace

T = TypeVar("T")
#: Wait for the loop to run one call.
CALL_TIMEOUT_S = 30.0


class BrokerThread:
    """Start with :meth:`start`; ``namesrv`` is the address clients are configured with."""

    def __init__(self, data_dir: Path, *, long_polling: bool = True, run: str = "client-check") -> None:
        self.data_dir = data_dir
        self.sink = MemorySink()
        self.clock = RealClock()
        self.trace = Trace(self.sink, run=run, clock=self.clock)
        self._config = BrokerConfig(long_polling_enable=long_polling)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="client-check-broker", daemon=True)
        self._servers: RemotingServers | None = None
        self.namesrv = ""

    def start(self) -> BrokerThread:
        self._thread.start()

        host = BrokerHost(self.data_dir, self.clock, config=self._config, trace=self.trace)
        future = asyncio.run_coroutine_threadsafe(start_remoting(host, "127.0.0.1", 0), self._loop)
        self._servers = future.result(timeout=CALL_TIMEOUT_S)
        host, port = self._servers.namesrv_addr
        self.namesrv = f"{host}:{port}"
        return self

    @property
    def broker(self) -> Broker:
        assert self._servers is not None, "start() first"
        return self._servers.broker

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn(*args, **kwargs)`` on the broker's loop and return its result."""
        async def run() -> T:
            return fn(*args, **kwargs)

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout=CALL_TIMEOUT_S)

    def rows(self) -> list[dict[str, Any]]:
        """A snapshot of the trace rows so far."""
        return self.call(lambda: list(self.sink.rows))

    def close(self) -> None:
        if self._servers is not None:
            asyncio.run_coroutine_threadsafe(self._servers.close(), self._loop).result(timeout=CALL_TIMEOUT_S)
            self._servers = None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=CALL_TIMEOUT_S)
        self._loop.close()
