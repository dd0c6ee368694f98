"""Fixtures for the remoting server tests: the real asyncio servers on loopback, in process.

``serving`` runs them on the test's own loop (``asyncio.run`` per test) with a simulated clock, so a hold
timeout is reached by ``clock.advance`` and never by waiting. :class:`ServerThread` hosts them on a loop in
a background thread for tests that talk plain blocking sockets (the framing fuzz test)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator
from pathlib import Path

from reference.broker.host import BrokerHost
from reference.clock import SimClock
from reference.net.remoting.server import RemotingServers, start_remoting
from reference.store.config import MessageStoreConfig
from reference.trace import MemorySink, Trace


@contextlib.asynccontextmanager
async def serving(
    data_dir: Path, clock: SimClock | None = None, sink: MemorySink | None = None, **store: object
) -> AsyncIterator[RemotingServers]:
    clock = clock or SimClock()
    trace = Trace(sink, run="remoting-test", clock=clock) if sink is not None else None

    host = BrokerHost(data_dir, clock, store_config=MessageStoreConfig(**store), trace=trace)
    servers = await start_remoting(host, "127.0.0.1", 0)
    try:
        yield servers
    finally:
        await servers.close()


class ServerThread:
    """The servers on an event loop of their own thread; ``namesrv_addr`` / ``broker_addr`` once started."""

    def __init__(self, data_dir: Path) -> None:
        self._data_dir = data_dir
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self.servers: RemotingServers | None = None
        self._thread = threading.Thread(target=self._run, name="remoting-server", daemon=True)

    def __enter__(self) -> ServerThread:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("remoting servers did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._main())
        self._loop.close()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        async with serving(self._data_dir) as servers:
            self.servers = servers
            self._ready.set()
            await self._stop.wait()

    @property
    def namesrv_addr(self) -> tuple[str, int]:
        assert self.servers is not None
        return self.servers.namesrv_addr

    @property
    def broker_addr(self) -> tuple[str, int]:
        assert self.servers is not None
        return self.servers.broker_addr
