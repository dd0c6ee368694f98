"""``mqtck broker --pulsar``: the Pulsar front's listener, on one asyncio loop with the broker.

The socket is bound first, so that the service URL (``pulsar://HOST:PORT``, the real port when 0 was asked) is
known before the first LOOKUP, which answers with exactly that URL (pulsar-binary §6: any other spelling makes
the client open a second connection). The line ``mqtck broker: serving pulsar://HOST:PORT`` is printed once the
listener accepts. Topics are created on first use, one queue each.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import signal
import socket

from reference.broker.broker import Broker
from reference.broker.host import BrokerHost
from reference.net.pulsar import frame
from reference.net.pulsar.connection import PulsarConnection
from reference.net.pulsar.topics import store_topic

log = logging.getLogger("mqtck.pulsar")


class PulsarFront:
    """What the handlers share: the broker host, the service URL, and the store reads a MESSAGE needs."""

    def __init__(self, host: BrokerHost, service_url: str, max_message_size: int = frame.MAX_MESSAGE_SIZE) -> None:
        self.host = host
        self.service_url = service_url
        self.max_message_size = max_message_size
        self._names = itertools.count()

    def broker(self) -> Broker:
        broker = self.host.broker
        if broker is None:
            raise RuntimeError("the broker is not running")
        return broker

    def running(self) -> Broker | None:
        """The broker, or None while none runs (a connection closing after the service stopped)."""
        return self.host.broker

    def ensure_topic(self, topic: str) -> str:
        """The store topic of a Pulsar topic, created with one queue on first use."""
        name = store_topic(topic)
        broker = self.broker()
        if name not in broker.store.topics():
            broker.create_topic(name, 1)
        return name

    def producer_name(self) -> str:
        return f"mqtck-{next(self._names)}"

    def _entry(self, group: str, topic: str, offset: int) -> tuple[bytes, int] | None:
        sub = self.broker().permits.subscriptions.get((group, topic))
        read = sub.cursor.read_entry(offset) if sub is not None else None
        return (read[0].body, read[1]) if read is not None else None

    def entry_bytes(self, group: str, topic: str, offset: int) -> bytes | None:
        entry = self._entry(group, topic, offset)
        return entry[0] if entry is not None else None

    def entry_size(self, group: str, topic: str, offset: int) -> int | None:
        entry = self._entry(group, topic, offset)
        return entry[1] if entry is not None else None

    def mark_delete(self, group: str, topic: str) -> int:
        sub = self.broker().permits.subscriptions.get((group, topic))
        return sub.cursor.mark_delete if sub is not None else 0


def bind(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.setblocking(False)
    return sock


async def start_front(front: PulsarFront, sock: socket.socket) -> asyncio.Server:
    """Accept connections on the bound ``sock`` for ``front`` (whose broker is open)."""
    counter = itertools.count()

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        await PulsarConnection(front, f"conn-{next(counter)}", writer).serve(reader)

    return await asyncio.start_server(accept, sock=sock, limit=frame.MAX_FRAME_BYTES + 8)


async def run_front(broker_host: BrokerHost, host: str, port: int) -> None:
    """Serve until SIGINT or SIGTERM; the host's broker is opened and closed here."""
    sock = bind(host, port)
    bound_host, bound_port = sock.getsockname()[:2]
    front = PulsarFront(broker_host, f"pulsar://{bound_host}:{bound_port}")
    broker_host.open()
    server = await start_front(front, sock)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    print(f"mqtck broker: serving {front.service_url}", flush=True)
    try:
        async with server:
            await stop.wait()
    finally:
        broker_host.close()


def serve_pulsar(broker_host: BrokerHost, host: str, port: int) -> None:
    asyncio.run(run_front(broker_host, host, port))
