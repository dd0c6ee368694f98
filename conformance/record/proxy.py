"""The recording proxy: a name server's front, and one front per broker its routes name.

Clients are pointed at the proxy's name-server address. Route answers (GET_ROUTEINFO_BY_TOPIC) come back with
every broker address replaced by the address of a broker front the proxy opens for it, so the clients' sends,
pulls, commits and heartbeats pass through the proxy too. A broker front listens on a port and on that port
minus 2, the "VIP channel" a RocketMQ 4.x producer sends on by default; both lead to the broker's address.

Bytes a client sends are forwarded as they came. Each frame is also decoded, on a copy, for the
:class:`~conformance.record.wire.WireRecorder`; a frame that does not decode is forwarded and counted. A stream
whose framing breaks (a length no frame can have) is forwarded raw from then on: the proxy never closes a
connection the server would keep, and one bad client never touches another's connection. Route answers are
the only bytes changed, and only their broker addresses.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct

from conformance.peers.rocketmq import free_port
from conformance.record.wire import Connection, WireRecorder
from reference.net.remoting.command import RemotingCommand, RequestCode, loads_body
from reference.net.remoting.frame import MAX_FRAME_BYTES, FrameError, decode_frame_payload
from reference.rules.codes import ResponseCode

log = logging.getLogger("mqtck.record")
_U32 = struct.Struct(">I")
#: A RocketMQ 4.x producer sends on the broker's port minus 2 (sendMessageWithVIPChannel, true by default).
VIP_CHANNEL_OFFSET = -2
READ_BYTES = 1 << 16


class FrameSplitter:
    """Splits a byte stream into whole frames (raw bytes, and the command when it decodes), until the framing
    breaks; from then on :meth:`feed` hands everything back raw as one piece with no command."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self.broken: str | None = None

    def feed(self, data: bytes) -> list[tuple[bytes, RemotingCommand | None]]:
        if self.broken is not None:
            return [(data, None)] if data else []
        self._buf += data
        out: list[tuple[bytes, RemotingCommand | None]] = []
        while len(self._buf) >= 4:
            (length,) = _U32.unpack_from(self._buf)
            if not 4 <= length <= MAX_FRAME_BYTES:
                self.broken = f"frame length {length} is outside 4..{MAX_FRAME_BYTES}"
                out.append((bytes(self._buf), None))
                self._buf.clear()
                return out
            if len(self._buf) < 4 + length:
                break
            raw = bytes(self._buf[:4 + length])
            del self._buf[:4 + length]
            try:
                out.append((raw, decode_frame_payload(raw[4:])))
            except FrameError:
                out.append((raw, None))
        return out


def _split(raw: bytes) -> tuple[bytes, bytes]:
    """A frame's bytes before its body (length, header word, header) and its body."""
    (word,) = _U32.unpack_from(raw, 4)
    header_end = 8 + (word & 0xFFFFFF)
    return raw[:header_end], raw[header_end:]


def route_brokers(raw: bytes) -> list[tuple[str, str]]:
    """(address, broker name) of every broker a route answer's frame names. The body is written by the
    broker's JSON library: fastjson writes the broker-id keys bare, which :func:`loads_body` reads."""
    route = loads_body(_split(raw)[1])
    return [(str(address), str(broker.get("brokerName", address)))
            for broker in route.get("brokerDatas") or () for address in (broker.get("brokerAddrs") or {}).values()]


def rewrite_route(raw: bytes, fronts: dict[str, str]) -> bytes:
    """A route answer's frame with each broker address in ``fronts`` replaced by its front; the header bytes
    are kept as they came."""
    head, body = _split(raw)
    text = body.decode("utf-8")
    for address, front in fronts.items():
        text = text.replace(f'"{address}"', f'"{front}"')
    new_body = text.encode("utf-8")
    return _U32.pack(len(head) - 4 + len(new_body)) + head[4:] + new_body


class RecordingProxy:
    """``listen`` (host, port; 0 = any free port) in front of the name server at ``upstream``."""

    def __init__(self, listen: tuple[str, int], upstream: tuple[str, int], recorder: WireRecorder) -> None:
        self.listen, self.upstream, self.recorder = listen, upstream, recorder
        self.host = listen[0]
        self._servers: list[asyncio.base_events.Server] = []
        #: upstream broker address -> the front's address clients are given.
        self.fronts: dict[str, str] = {}
        self.address = ""

    async def start(self) -> str:
        server = await asyncio.start_server(lambda r, w: self._serve(r, w, self.upstream, None),
                                            self.listen[0], self.listen[1])
        self._servers.append(server)
        port = server.sockets[0].getsockname()[1]
        self.address = f"{self.listen[0]}:{port}"
        return self.address

    async def close(self) -> None:
        for server in self._servers:
            server.close()

    # -- fronts ---------------------------------------------------------------------------------
    async def _front_for(self, address: str, broker_name: str) -> None:
        """Open the front of the broker at ``address`` (on a port and its VIP-channel neighbour), once."""
        if address in self.fronts:
            return
        port = free_port(self.host, neighbours=(VIP_CHANNEL_OFFSET,))
        self.fronts[address] = f"{self.host}:{port}"
        host, upstream_port = address.rsplit(":", 1)
        for listen_port in (port, port + VIP_CHANNEL_OFFSET):
            self._servers.append(await asyncio.start_server(
                lambda r, w: self._serve(r, w, (host, int(upstream_port)), broker_name), self.host, listen_port))

    # -- connections ----------------------------------------------------------------------------
    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, upstream: tuple[str, int],
                     broker: str | None) -> None:
        peer = "{}:{}".format(*writer.get_extra_info("peername")[:2])
        try:
            up_reader, up_writer = await asyncio.open_connection(*upstream)
        except OSError as exc:
            log.warning("upstream %s:%s refused %s: %s", *upstream, peer, exc)
            writer.close()
            return
        conn = Connection(peer, broker)
        routes: set[int] = set()
        pumps = [asyncio.ensure_future(self._client_to_server(reader, up_writer, conn, routes)),
                 asyncio.ensure_future(self._server_to_client(up_reader, writer, conn, routes))]
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pump in pumps:
                pump.cancel()
            for w in (writer, up_writer):
                with contextlib.suppress(Exception):
                    w.close()

    async def _client_to_server(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, conn: Connection,
                                routes: set[int]) -> None:
        splitter = FrameSplitter()
        while data := await reader.read(READ_BYTES):
            writer.write(data)  # as it came, before anything else
            was_broken = splitter.broken
            for _raw, cmd in splitter.feed(data):
                if cmd is not None and not cmd.is_response and cmd.code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
                    routes.add(cmd.opaque)
                self.recorder.from_client(conn, cmd)
            if splitter.broken and not was_broken:
                log.warning("client %s: %s; its bytes are forwarded unread from here", conn.peer, splitter.broken)
            await writer.drain()

    async def _server_to_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, conn: Connection,
                                routes: set[int]) -> None:
        splitter = FrameSplitter()
        while data := await reader.read(READ_BYTES):
            if conn.broker is not None:
                # A broker sends no route answers: its bytes go on as they came, in one write, before anything is
                # decoded (the recorder adds no latency to the answer, and one send per read, not per frame).
                writer.write(data)
                for _raw, cmd in splitter.feed(data):
                    self.recorder.from_server(conn, cmd)
                await writer.drain()
                continue
            for raw, cmd in splitter.feed(data):
                if cmd is not None and cmd.is_response and cmd.opaque in routes:
                    routes.discard(cmd.opaque)
                    if cmd.code == ResponseCode.SUCCESS and cmd.body:
                        try:
                            for address, name in route_brokers(raw):
                                await self._front_for(address, name)
                            raw = rewrite_route(raw, self.fronts)
                        except (ValueError, UnicodeDecodeError, AttributeError, OSError) as exc:
                            log.warning("a route answer to %s did not parse (%s): passed on unchanged", conn.peer, exc)
                self.recorder.from_server(conn, cmd)
                writer.write(raw)
            await writer.drain()
