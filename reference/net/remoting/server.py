"""Run the name server and the broker on two TCP ports of one asyncio loop.

One process serves both, as ``mqtck broker --remoting`` needs, but on separate ports as in RocketMQ: the
client asks the name server (the address users configure) for routes, and connects to the broker address
those routes name. The broker's socket is bound *before* the broker is built, because its real address
(with an ephemeral port) is what every stored record carries as STOREHOST and what clients send
CONSUMER_SEND_MSG_BACK to (protocols/rocketmq-remoting.md §6.2).

The address line ``mqtck broker: serving remoting://HOST:PORT`` names the name server, printed once both
ports listen, so a test can start on port 0 and read the real port.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass

from reference.broker.broker import Broker
from reference.net.remoting.broker_handlers import BrokerRequestHandlers
from reference.net.remoting.connection import Dispatch, RemotingConnection
from reference.net.remoting.frame import MAX_FRAME_BYTES
from reference.net.remoting.namesrv import AUTO_CREATE_QUEUE_NUMS, NameServer

log = logging.getLogger("mqtck.remoting")

#: Builds the broker once its reachable address (STOREHOST) is known.
BrokerFactory = Callable[[tuple[str, int]], Broker]


def bind_socket(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.setblocking(False)
    return sock


def advertised_host(host: str) -> str:
    """The address clients are told to connect to: a wildcard bind is advertised as loopback."""
    return "127.0.0.1" if host in ("", "0.0.0.0") else host


class TcpService:
    """A listening socket whose connections each run a :class:`RemotingConnection` with ``dispatch``."""

    def __init__(self, dispatch: Dispatch, on_close: Callable[[RemotingConnection], None] | None = None,
                 max_frame_bytes: int = MAX_FRAME_BYTES) -> None:
        self._dispatch = dispatch
        self._on_close = on_close
        self._max_frame_bytes = max_frame_bytes
        self.connections: set[RemotingConnection] = set()
        self._server: asyncio.Server | None = None

    async def start(self, sock: socket.socket) -> tuple[str, int]:
        self._server = await asyncio.start_server(self._accept, sock=sock)
        host, port = sock.getsockname()[:2]
        return host, port

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = RemotingConnection(reader, writer, self._dispatch, self._closed, self._max_frame_bytes)
        self.connections.add(conn)
        await conn.serve()

    def _closed(self, conn: RemotingConnection) -> None:
        self.connections.discard(conn)
        if self._on_close is not None:
            self._on_close(conn)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for conn in list(self.connections):
            conn.close()
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)


@dataclass
class RemotingServers:
    """The running pair. ``namesrv_addr`` is what clients are configured with."""

    broker: Broker
    handlers: BrokerRequestHandlers
    namesrv: TcpService
    broker_service: TcpService
    namesrv_addr: tuple[str, int]
    broker_addr: tuple[str, int]

    async def close(self) -> None:
        await self.namesrv.close()
        await self.broker_service.close()
        self.broker.shutdown()


async def start_remoting(
    make_broker: BrokerFactory, host: str, namesrv_port: int, broker_port: int = 0,
    queue_nums: int = AUTO_CREATE_QUEUE_NUMS, max_frame_bytes: int = MAX_FRAME_BYTES,
) -> RemotingServers:
    """Bind both ports, build and start the broker, serve. Must run on the loop that will serve."""
    broker_sock = bind_socket(host, broker_port)
    namesrv_sock = bind_socket(host, namesrv_port)
    advertised = advertised_host(host)
    broker_addr = (advertised, broker_sock.getsockname()[1])
    broker = make_broker(broker_addr)
    handlers = BrokerRequestHandlers(broker, broker_addr)
    name_server = NameServer(broker, f"{broker_addr[0]}:{broker_addr[1]}", queue_nums)
    broker_service = TcpService(handlers.dispatch, handlers.channel_closed, max_frame_bytes)
    namesrv = TcpService(name_server.dispatch, None, max_frame_bytes)
    broker.start()
    await broker_service.start(broker_sock)
    _, ns_port = await namesrv.start(namesrv_sock)
    return RemotingServers(broker, handlers, namesrv, broker_service, (advertised, ns_port), broker_addr)


def serve_remoting(make_broker: BrokerFactory, host: str, namesrv_port: int, broker_port: int = 0,
                   queue_nums: int = AUTO_CREATE_QUEUE_NUMS) -> None:
    """Serve until SIGINT/SIGTERM, printing the name server's address line once listening."""
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s", stream=sys.stderr)

    async def main() -> None:
        servers = await start_remoting(make_broker, host, namesrv_port, broker_port, queue_nums)
        ns_host, ns_port = servers.namesrv_addr
        b_host, b_port = servers.broker_addr
        print(f"mqtck broker: broker at {b_host}:{b_port}", file=sys.stderr, flush=True)
        print(f"mqtck broker: serving remoting://{ns_host}:{ns_port}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        try:
            await stop.wait()
        finally:
            await servers.close()

    asyncio.run(main())
