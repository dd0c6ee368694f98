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

When a client closes its connection, the broker may not have answered its last requests yet, and some rows are
written from the answer (a COMMIT of a two-way UPDATE_CONSUMER_OFFSET is written when the broker answers SUCCESS).
The Go client sends its offset commits as ordinary requests whose answers it ignores, and closes its connections
right after its shutdown's persist: the broker applies those commits, and a proxy that closed the broker's side
at once would lose their rows. So after a client's close the proxy keeps reading the broker's answers while
requests other than pulls are unanswered (at most :data:`CLOSE_DRAIN_S`), then closes.
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
#: Port pairs a broker front tries before the route answer is passed on unchanged (the broker then unrecorded).
FRONT_BIND_ATTEMPTS = 20
READ_BYTES = 1 << 16
#: After a client closes its connection, how long the proxy may wait for the broker's answers to its last
#: requests (pulls excepted: a held pull may be answered 20 s later, and its answer changes nothing the client
#: did) before it closes the broker's side. The broker answers in milliseconds; this only bounds a broker that
#: does not answer.
CLOSE_DRAIN_S = 2.0
CLOSE_DRAIN_POLL_S = 0.005
#: When the recording stops: how long the loop may first run on, so that a client's close that had already
#: arrived is seen (and its connection's drain started) before the proxy looks for connections to wait for.
CLOSE_SETTLE_S = 0.05


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
        self._fronts_lock = asyncio.Lock()
        self.address = ""
        #: Connections whose client has closed while the proxy still reads the broker's last answers.
        self._draining: set[asyncio.Task[None]] = set()

    async def start(self) -> str:
        server = await asyncio.start_server(lambda r, w: self._serve(r, w, self.upstream, None),
                                            self.listen[0], self.listen[1])
        self._servers.append(server)
        port = server.sockets[0].getsockname()[1]
        self.address = f"{self.listen[0]}:{port}"
        return self.address

    async def close(self) -> None:
        """Stop accepting connections, and let the connections whose client has already closed read the broker's
        last answers (at most :data:`CLOSE_DRAIN_S`): a recording stopped right after a client's shutdown still
        holds what the broker did for it."""
        for server in self._servers:
            server.close()
        await asyncio.sleep(CLOSE_SETTLE_S)
        if self._draining:
            await asyncio.wait(set(self._draining), timeout=CLOSE_DRAIN_S + 1)

    # -- fronts ---------------------------------------------------------------------------------
    async def _front_for(self, address: str, broker_name: str) -> None:
        """Open the front of the broker at ``address`` (on a port and its VIP-channel neighbour), once; clients are
        given it only once both ports listen. A free port can be taken before it is bound (by another process
        picking ports from the same range: two recorded runs at once lost every send to a front that never
        listened), so a pair that cannot be bound is given up and another drawn."""
        async with self._fronts_lock:  # two route answers at once must not open two fronts of one broker
            if address in self.fronts:
                return
            host, upstream_port = address.rsplit(":", 1)
            for _ in range(FRONT_BIND_ATTEMPTS):
                port = free_port(self.host, neighbours=(VIP_CHANNEL_OFFSET,))
                servers: list[asyncio.base_events.Server] = []
                try:
                    for listen_port in (port, port + VIP_CHANNEL_OFFSET):
                        servers.append(await asyncio.start_server(
                            lambda r, w: self._serve(r, w, (host, int(upstream_port)), broker_name), self.host,
                            listen_port))
                except OSError as exc:
                    log.warning("the front of %s could not bind %s:%s (%s): drawing another port", address,
                                self.host, port, exc)
                    for server in servers:
                        server.close()
                    continue
                self._servers.extend(servers)
                self.fronts[address] = f"{self.host}:{port}"
                return
            raise OSError(f"no free port pair for the front of {address} after {FRONT_BIND_ATTEMPTS} attempts")

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
        task = asyncio.current_task()
        try:
            done, _ = await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
            if pumps[0] in done and not pumps[1].done():
                if task is not None:
                    self._draining.add(task)
                await self._drain_answers(conn, pumps[1])
        finally:
            for pump in pumps:
                pump.cancel()
            for w in (writer, up_writer):
                with contextlib.suppress(Exception):
                    w.close()
            self._draining.discard(task)  # type: ignore[arg-type]

    @staticmethod
    async def _drain_answers(conn: Connection, server_pump: asyncio.Future[None]) -> None:
        """The client has closed: let ``server_pump`` read (and the recorder map) the broker's answers to the
        client's unanswered requests other than pulls, for at most :data:`CLOSE_DRAIN_S`."""
        deadline = asyncio.get_running_loop().time() + CLOSE_DRAIN_S
        while (not server_pump.done() and asyncio.get_running_loop().time() < deadline
               and any(cmd.code != RequestCode.PULL_MESSAGE for cmd, _ in conn.pending.values())):
            await asyncio.sleep(CLOSE_DRAIN_POLL_S)

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
                # Once the client has gone (the drain after its close) they are only recorded.
                if not writer.is_closing():
                    writer.write(data)
                for _raw, cmd in splitter.feed(data):
                    self.recorder.from_server(conn, cmd)
                with contextlib.suppress(ConnectionError):
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
