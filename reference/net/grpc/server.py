"""Serve the v5 ``MessagingService`` with grpcio's asyncio server, on the loop that drives the broker.

Why ``grpc.aio`` rather than the thread-pool ``grpc.server``: the core is single-threaded and its timers (the POP
long polling's deadlines, revive, offsets) run on an asyncio loop through the broker's clock. With ``grpc.aio`` every
handler runs on that one loop, beside the remoting front's connections when both are served (``mqtck broker
--remoting A --grpc B``), so no lock is needed and a held ReceiveMessage is woken by the same arrival listener and
clock timer as a held POP_MESSAGE. A thread pool would have to hop every call onto the loop anyway.

:func:`start_grpc` starts the front on the running loop over an open broker host (a
:data:`~reference.net.fronts.FrontStarter` once its address is bound in); :func:`serve_grpc` is ``mqtck broker
--grpc`` alone: it opens the broker, serves until SIGINT/SIGTERM, and prints ``mqtck broker: serving
grpc://HOST:PORT`` once listening.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import grpc  # type: ignore[import-untyped]

from reference.broker.host import BrokerHost
from reference.net.fronts import FrontStarter, ServedFront
from reference.net.grpc import protos
from reference.net.grpc.limits import PROXY_DEFAULTS, ReceiveLimits
from reference.net.grpc.service import MessagingServicer
from reference.net.grpc.state import FrontState
from reference.net.remoting.frame import MAX_FRAME_BYTES
from reference.net.remoting.namesrv import AUTO_CREATE_QUEUE_NUMS

#: The largest request the server reads (gRPC's own default is 4 MB, less than a 4 MiB body and its envelope):
#: the remoting frame limit, so that a body over the store's maximum is refused as MESSAGE_BODY_TOO_LARGE by the
#: front, naming the field, rather than by the transport.
MAX_REQUEST_BYTES = MAX_FRAME_BYTES
#: How long a stop lets running calls finish (held receives are cut: their clients retry).
STOP_GRACE_S = 1.0


def advertised_host(host: str) -> str:
    """The address clients are told: a wildcard bind is advertised as loopback."""
    return "127.0.0.1" if host in ("", "0.0.0.0") else host


@dataclass
class GrpcFront:
    """A running gRPC front."""

    server: Any
    state: FrontState

    @property
    def address(self) -> tuple[str, int]:
        return self.state.address

    @property
    def url(self) -> str:
        return f"grpc://{self.address[0]}:{self.address[1]}"

    @property
    def late_answers(self) -> int:
        return self.state.late_answers

    def broker_restarted(self) -> None:
        """Held receives end as empty polls (the new broker does not hold them); the clients ask again."""
        now = self.state.broker.clock.now_ms()
        for held in list(self.state.held):
            held.end_empty(now)

    async def close(self) -> None:
        self.state.renewals.stop()
        await self.server.stop(STOP_GRACE_S)


def _bind(host: str, port: int) -> tuple[Any, int]:
    """A new asyncio server with ``host:port`` bound (0: a free port); must run on the serving loop."""
    server = grpc.aio.server(options=[("grpc.max_receive_message_length", MAX_REQUEST_BYTES)])
    bound = server.add_insecure_port(f"{host}:{port}")
    if bound == 0:
        raise OSError(f"cannot bind {host}:{port} for gRPC")
    return server, bound


async def _serve(server: Any, broker_host: BrokerHost, address: tuple[str, int], queue_nums: int,
                 limits: ReceiveLimits) -> GrpcFront:
    stubs = protos.load()
    state = FrontState(broker_host, address, stubs, queue_nums, limits)
    stubs.grpc.add_MessagingServiceServicer_to_server(MessagingServicer(state), server)
    await server.start()
    state.renewals.start()
    return GrpcFront(server, state)


async def start_grpc(broker_host: BrokerHost, host: str, port: int,
                     queue_nums: int = AUTO_CREATE_QUEUE_NUMS, limits: ReceiveLimits = PROXY_DEFAULTS) -> GrpcFront:
    """Bind ``host:port`` (0: a free port) and serve the open broker of ``broker_host`` on the running loop."""
    server, bound = _bind(host, port)
    return await _serve(server, broker_host, (advertised_host(host), bound), queue_nums, limits)


def grpc_starter(host: str, port: int, limits: ReceiveLimits = PROXY_DEFAULTS) -> FrontStarter:
    """The gRPC front as another server's extra front (``mqtck broker --remoting A --grpc B``)."""

    async def start(broker_host: BrokerHost) -> ServedFront:
        return await start_grpc(broker_host, host, port, limits=limits)

    return start


def serve_grpc(broker_host: BrokerHost, host: str, port: int, fronts: Sequence[FrontStarter] = (),
               limits: ReceiveLimits = PROXY_DEFAULTS) -> None:
    """``mqtck broker --grpc`` alone: open the broker, serve until SIGINT/SIGTERM, then close it."""
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s", stream=sys.stderr)

    async def main() -> None:
        server, bound = _bind(host, port)
        address = (advertised_host(host), bound)
        broker_host.open(store_host=address)  # the front's address is every record's STOREHOST
        served: list[ServedFront] = []
        try:
            served.append(await _serve(server, broker_host, address, AUTO_CREATE_QUEUE_NUMS, limits))
            for start in fronts:
                served.append(await start(broker_host))
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):  # before the serving line: a launcher may stop us at once
                with contextlib.suppress(NotImplementedError):
                    loop.add_signal_handler(sig, stop.set)
            for front in served:
                print(f"mqtck broker: serving {front.url}", flush=True)
            await stop.wait()
        finally:
            for front in served:
                await front.close()
            broker_host.close()

    asyncio.run(main())
