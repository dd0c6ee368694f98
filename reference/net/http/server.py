"""Run the HTTP front on uvicorn, on loopback unless told otherwise.

The bound address is printed as one line (``mqtck broker: serving http://HOST:PORT``) once the
socket listens, so a test or a CI script can start the server on port 0 and read the real port.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import uvicorn

from reference.broker.host import BrokerHost
from reference.net.fronts import FrontStarter, ServedFront
from reference.net.http.app import create_app

#: Connections the listening socket queues before they are accepted: thousands of long-polling clients connect at
#: once (``mqtck bench held`` opens 10,000); uvicorn's default, 2048, resets some of them. The kernel caps it at
#: net.core.somaxconn.
LISTEN_BACKLOG = 8192


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, broker_host: BrokerHost, fronts: Sequence[FrontStarter]) -> None:
        super().__init__(config)
        self._broker_host = broker_host
        self._fronts = fronts
        self._served: list[ServedFront] = []

    async def startup(self, sockets=None) -> None:  # type: ignore[no-untyped-def]
        await super().startup(sockets)  # the lifespan has opened the broker: the other fronts start on it
        self._served = [await start(self._broker_host) for start in self._fronts]
        for server in self.servers:
            for sock in server.sockets:
                host, port = sock.getsockname()[:2]
                print(f"mqtck broker: serving http://{host}:{port}", flush=True)
                break
            break
        for front in self._served:
            print(f"mqtck broker: serving {front.url}", flush=True)

    async def shutdown(self, sockets=None) -> None:  # type: ignore[no-untyped-def]
        for front in self._served:  # before the lifespan closes the broker
            await front.close()
        await super().shutdown(sockets)


def serve_http(broker_host: BrokerHost, host: str, port: int, name: str = "reference",
               api_keys: frozenset[str] = frozenset(), fronts: Sequence[FrontStarter] = ()) -> None:
    """Serve until interrupted; the broker is closed with the application. ``api_keys``: the keys a client must
    send (none: every client is served). ``fronts``: more fronts on the same broker and loop
    (``reference.net.fronts``), each announced by its own serving line after the HTTP one."""
    config = uvicorn.Config(
        create_app(broker_host, name, api_keys), host=host, port=port, log_level="warning", lifespan="on",
        access_log=False, timeout_graceful_shutdown=2, backlog=LISTEN_BACKLOG,
    )
    server = _Server(config, broker_host, fronts)
    server.run()
    sys.stdout.flush()
