"""The Pulsar recording proxy: ``mqtck record --protocol pulsar`` sits between Pulsar clients and a broker.

Clients are given ``--listen`` as their service URL. Every connection is passed on to the broker byte for byte,
except one answer: a LOOKUP_RESPONSE names the broker that serves a topic (``brokerServiceUrl``), and a client
that followed it would leave the proxy. So the proxy opens a listener for each broker a lookup names (the upstream
itself is the main listener), and rewrites the answer to name that listener, dropping the TLS URL and
``proxy_through_service_url`` (the client is to connect to the listener directly). Frames of both directions
are split and decoded with the reference front's codec (``reference.net.pulsar.frame``) and given to the recorder
(:class:`conformance.record.pulsar_wire.PulsarRecorder`); a stream that stops framing (a size past the limit, a
command that does not parse) is forwarded unread from there, and counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
from typing import Any

from conformance.record.pulsar_wire import PulsarConnection, PulsarRecorder
from reference.net.pulsar import frame
from reference.net.pulsar.schema import pb

log = logging.getLogger("mqtck.record.pulsar")

READ_BYTES = 1 << 16
SCHEME = "pulsar://"


class PulsarFrames:
    """Splits one direction's bytes into frames (everything after totalSize), decoding each command."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self.broken: str | None = None

    def feed(self, data: bytes) -> list[tuple[bytes, Any, bytes]]:
        """(the frame's bytes with its size, the BaseCommand, the bytes after it) for each whole frame."""
        if self.broken:
            return []
        self._buf += data
        out: list[tuple[bytes, Any, bytes]] = []
        while len(self._buf) >= 4:
            (total,) = struct.unpack_from(">I", self._buf)
            if not 4 <= total <= frame.MAX_FRAME_BYTES:
                self.broken = f"a frame of {total} bytes (allowed 4..{frame.MAX_FRAME_BYTES})"
                return out
            if len(self._buf) < 4 + total:
                break
            raw = bytes(self._buf[:4 + total])
            del self._buf[:4 + total]
            try:
                command, rest = frame.decode(raw[4:])
            except frame.FrameError as exc:
                self.broken = str(exc)
                self._buf[:0] = raw
                return out
            out.append((raw, command, rest))
        return out

    def unread(self) -> bytes:
        """The bytes held since the stream broke (to forward them as they are)."""
        data = bytes(self._buf)
        self._buf.clear()
        return data


def rewrite_lookup(command: Any, url: str) -> bytes:
    """The LOOKUP_RESPONSE ``command`` naming ``url`` as the broker, as a frame."""
    answer = command.lookupTopicResponse
    answer.DiscardUnknownFields()  # brokerServiceUrlTls, proxy_through_service_url: not for a direct connection
    answer.brokerServiceUrl = url
    return frame.encode(command)


class PulsarRecordingProxy:
    """``listen`` (host, port; 0 = any free port) in front of the broker at ``upstream``."""

    def __init__(self, listen: tuple[str, int], upstream: tuple[str, int], recorder: PulsarRecorder) -> None:
        self.listen, self.upstream, self.recorder = listen, upstream, recorder
        self.host = listen[0]
        self._servers: list[asyncio.base_events.Server] = []
        #: broker host:port -> the listener's host:port clients are given for it.
        self.fronts: dict[str, str] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> str:
        address = await self._listen(self.upstream, self.listen[1])
        self.fronts["{}:{}".format(*self.upstream)] = address
        return address

    async def close(self) -> None:
        for server in self._servers:
            server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=2)

    async def _listen(self, upstream: tuple[str, int], port: int) -> str:
        server = await asyncio.start_server(lambda r, w: self._serve(r, w, upstream), self.host, port)
        self._servers.append(server)
        return f"{self.host}:{server.sockets[0].getsockname()[1]}"

    async def _front_for(self, url: str) -> str | None:
        """The listener's URL for the broker ``url`` names (opened on first use), None for a URL not pulsar://."""
        if not url.startswith(SCHEME):
            return None
        address = url[len(SCHEME):].rstrip("/")
        if address not in self.fronts:
            host, _, port = address.rpartition(":")
            self.fronts[address] = await self._listen((host, int(port)), 0)
        return SCHEME + self.fronts[address]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     upstream: tuple[str, int]) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        peer = "{}:{}".format(*writer.get_extra_info("peername")[:2])
        try:
            up_reader, up_writer = await asyncio.open_connection(*upstream)
        except OSError as exc:
            log.warning("upstream %s:%s refused %s: %s", *upstream, peer, exc)
            writer.close()
            self._tasks.discard(task)  # type: ignore[arg-type]
            return
        conn = PulsarConnection(peer, "{}:{}".format(*upstream))
        pumps = [asyncio.ensure_future(self._client_to_broker(reader, up_writer, conn)),
                 asyncio.ensure_future(self._broker_to_client(up_reader, writer, conn))]
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pump in pumps:
                pump.cancel()
            for w in (writer, up_writer):
                with contextlib.suppress(Exception):
                    w.close()
            self.recorder.closed(conn)
            self._tasks.discard(task)  # type: ignore[arg-type]

    async def _client_to_broker(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                                conn: PulsarConnection) -> None:
        frames = PulsarFrames()
        with contextlib.suppress(ConnectionError):
            while data := await reader.read(READ_BYTES):
                writer.write(data)  # as it came, before anything else
                was_broken = frames.broken
                for _raw, command, rest in frames.feed(data):
                    self.recorder.from_client(conn, command, rest)
                if frames.broken and not was_broken:
                    self.recorder.malformed += 1
                    log.warning("client %s: %s; its bytes are forwarded unread from here", conn.peer, frames.broken)
                await writer.drain()

    async def _broker_to_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                                conn: PulsarConnection) -> None:
        frames = PulsarFrames()
        with contextlib.suppress(ConnectionError):
            while data := await reader.read(READ_BYTES):
                if frames.broken:
                    writer.write(data)
                    await writer.drain()
                    continue
                out = bytearray()
                for raw, command, rest in frames.feed(data):
                    if command.type == pb.Type_.LOOKUP_RESPONSE and command.lookupTopicResponse.brokerServiceUrl:
                        url = await self._front_for(command.lookupTopicResponse.brokerServiceUrl)
                        if url is not None:
                            raw = rewrite_lookup(command, url)
                    # Recorded before the client can see it: a FLOW the client sends in answer comes after it.
                    self.recorder.from_server(conn, command, rest)
                    out += raw
                if frames.broken:
                    self.recorder.malformed += 1
                    log.warning("broker %s: %s; its bytes are forwarded unread from here", conn.broker, frames.broken)
                    out += frames.unread()
                writer.write(bytes(out))
                await writer.drain()
