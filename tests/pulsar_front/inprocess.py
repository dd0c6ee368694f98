"""The Pulsar front on a thread of the test process, advertising a service URL of the test's choosing (a
recording proxy's, so that the client's lookups keep it on the proxy)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from reference.broker.host import BrokerHost
from reference.clock import RealClock
from reference.net.pulsar.server import PulsarFront, bind, start_front


class FrontThread:
    def __init__(self, data_dir: Path) -> None:
        self.sock = bind("127.0.0.1", 0)
        host, port = self.sock.getsockname()[:2]
        self.address = f"{host}:{port}"
        self.host = BrokerHost(data_dir, RealClock())
        self.loop = asyncio.new_event_loop()
        self._stopped = asyncio.Event()
        self._ready = threading.Event()
        self.front: PulsarFront | None = None

    def start(self, advertised: str) -> None:
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(self._main(advertised),),
                                       daemon=True)
        self.thread.start()
        assert self._ready.wait(10), "the front did not start"

    async def _main(self, advertised: str) -> None:
        self.front = PulsarFront(self.host, advertised)
        self.host.open()
        server = await start_front(self.front, self.sock)
        self._ready.set()
        try:
            async with server:
                await self._stopped.wait()
        finally:
            self.host.close()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self._stopped.set)
        self.thread.join(10)
