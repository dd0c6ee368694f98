"""Run the name server and the broker on two TCP ports of one asyncio loop.

One process serves both, as ``mqtck broker --remoting`` needs, but on separate ports as in RocketMQ: the
client asks the name server (the address users configure) for routes, and connects to the broker address
those routes name. The broker's socket is bound *before* the broker is built, because its real address
(with an ephemeral port) is what every stored record carries as STOREHOST and what clients send
CONSUMER_SEND_MSG_BACK to (protocols/rocketmq-remoting.md §6.2).

The address line ``mqtck broker: serving remoting://HOST:PORT`` names the name server, printed once both
ports listen, so a test can start on port 0 and read the real port (with ``?control=HOST:PORT`` appended when
the runner serves a control channel, ``conformance.targets.control``).

Restarts (:meth:`RemotingServers.restart_broker`) keep both listeners and the broker's address: the broker's
connections are closed, as a real broker's are when its process stops, the broker is shut down cleanly or
crashed (what SIGKILL leaves), both by the :class:`~reference.broker.host.BrokerHost` every runner uses, and a
new one is opened on the same data directory. :class:`LoopControl` offers restart, retention expiry and the store layout
to a control channel running on another thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import signal
import socket
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from reference.broker.broker import Broker
from reference.broker.host import BrokerHost
from reference.broker.settings import apply_settings
from reference.clock import SimClock
from reference.net.fronts import FrontStarter, ServedFront
from reference.net.remoting.acl.validator import AccessValidator
from reference.net.remoting.broker_handlers import BrokerRequestHandlers
from reference.net.remoting.connection import Dispatch, RemotingConnection
from reference.net.remoting.frame import MAX_FRAME_BYTES
from reference.net.remoting.namesrv import AUTO_CREATE_QUEUE_NUMS, NameServer
from reference.store.record import tear_record
from reference.trace import RingSink

log = logging.getLogger("mqtck.remoting")

#: Called on the serving loop once both ports listen: what to append to the served target (e.g.
#: ``?control=HOST:PORT``) and what to call when serving ends.
Extension = Callable[["RemotingServers"], tuple[str, Callable[[], None]]]
#: How long a control operation may take on the loop (a restart reopens and recovers the store).
LOOP_OPERATION_TIMEOUT_S = 120.0
T = TypeVar("T")


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
        #: Late answers (held pulls and pops answered after their handler returned) written so far.
        self.late_answers = 0
        self._server: asyncio.Server | None = None

    async def start(self, sock: socket.socket) -> tuple[str, int]:
        self._server = await asyncio.start_server(self._accept, sock=sock)
        host, port = sock.getsockname()[:2]
        return host, port

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = RemotingConnection(reader, writer, self._dispatch, self._closed, self._max_frame_bytes,
                                  self._late_answer)
        self.connections.add(conn)
        log.info("remoting %s: connected", conn.key)
        await conn.serve()

    def _late_answer(self) -> None:
        self.late_answers += 1

    def _closed(self, conn: RemotingConnection) -> None:
        log.info("remoting %s: closed", conn.key)
        self.connections.discard(conn)
        if self._on_close is not None:
            self._on_close(conn)

    def retarget(self, dispatch: Dispatch, on_close: Callable[[RemotingConnection], None] | None) -> None:
        """Serve connections accepted from now on with ``dispatch`` (existing ones keep theirs)."""
        self._dispatch = dispatch
        self._on_close = on_close

    def close_connections(self) -> None:
        """Close every open connection (the listener stays): clients see the peer go away."""
        for conn in list(self.connections):
            conn.close()

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
    """The running pair. ``namesrv_addr`` is what clients are configured with; ``host`` runs the broker."""

    host: BrokerHost
    handlers: BrokerRequestHandlers
    namesrv: TcpService
    broker_service: TcpService
    namesrv_addr: tuple[str, int]
    broker_addr: tuple[str, int]
    name_server: NameServer
    #: The other fronts served on this broker and loop (``serve_remoting``'s ``fronts``).
    fronts: list[ServedFront] = field(default_factory=list)

    @property
    def broker(self) -> Broker:
        broker = self.host.broker
        assert broker is not None, "the broker is only ever down inside a restart, which runs in one loop turn"
        return broker

    async def close(self) -> None:
        await self.namesrv.close()
        await self.broker_service.close()
        self.host.close()

    def restart_broker(self, kill: bool = False, tear_at: int | None = None, wipe: bool = False) -> None:
        """Replace the broker by a new one on the same data and address (on the serving loop).

        Its connections are closed first (held pulls are dropped; clients reconnect and register again).
        Clean: the old broker shuts down (offsets persisted, store closed). ``kill``: it is killed,
        so commits since the last offset persist are lost and the new broker recovers the store as after
        SIGKILL. ``tear_at``: after the kill, the record at that commit-log offset is torn (its magic overwritten,
        :func:`reference.store.record.tear_record`) before the new broker recovers; ``wipe``: after the kill, the
        store is emptied, so the new broker starts as on a new machine. The trace gets CRASH
        (``clean`` in its detail for a clean restart) and RESTART."""
        torn: list[Exception] = []

        def tear(old: Broker) -> None:
            if wipe:
                for child in old.store.data_dir.iterdir():
                    if child.is_dir():
                        shutil.rmtree(child)
                    else:
                        child.unlink()
            if tear_at is None:
                return
            try:
                tear_record(old.store.data_dir / "commitlog", old.store.config.commit_log_segment_bytes, tear_at)
            except ValueError as exc:  # the broker comes back all the same; the caller hears why
                torn.append(exc)

        # All of this runs in one loop callback: no request arrives in between. A killed process never sees
        # its connections close, so the crashed broker is not told.
        self.broker_service.retarget(self.handlers.dispatch, None if kill else self.handlers.channel_closed)
        self.broker_service.close_connections()
        broker = self.host.restart(kill, between=tear if kill else None)
        self.handlers = BrokerRequestHandlers(broker, self.broker_addr, self.handlers.acl)
        self.name_server.broker = broker
        self.broker_service.retarget(self.handlers.dispatch, self.handlers.channel_closed)
        for front in self.fronts:
            front.broker_restarted()
        if torn:
            raise torn[0]

    def expire_retention(self) -> int:
        """Clean runs with fileReservedTime 0 (every commit-log segment but the one being written expires),
        consume queues and min offsets included, until none is left: how many commit-log segments they deleted."""
        return self.broker.store.expire_all()


class LoopControl:
    """A :class:`conformance.targets.control.BrokerControl` over running servers: each operation is run on
    the serving loop (the broker is single-threaded) and waited for from the caller's thread."""

    def __init__(self, servers: RemotingServers, loop: asyncio.AbstractEventLoop,
                 implementation: str = "mqtck-reference", ring: RingSink | None = None) -> None:
        self.servers = servers
        self.loop = loop
        self.implementation = implementation
        #: The broker's trace, when the runner keeps one for the channel (capability ``trace``).
        self.ring = ring
        #: Every setting changed through the channel, put on each new broker after a restart.
        self._settings: dict[str, Any] = {}
        #: The runner's simulated clock (``mqtck broker --sim-clock``): the channel then offers clock control.
        self.sim_clock = servers.host.clock if isinstance(servers.host.clock, SimClock) else None

    def describe(self) -> dict[str, Any]:
        return self._on_loop(self._describe)

    def _describe(self) -> dict[str, Any]:
        store = self.servers.broker.store
        config = store.config
        broker_config = self.servers.broker.config
        return {
            "implementation": self.implementation,
            "capabilities": ["restart", "retention_expire", "store_layout", "broker_config", "manual_delete",
                             "torn_restart", "race_control", "retention_control", "fresh_store",
                             *(["trace"] if self.ring is not None else []),
                             *(["clock_control"] if self.sim_clock is not None else [])],
            "store": {"commitlog_segment_bytes": config.commit_log_segment_bytes,
                      "consumequeue_segment_units": config.consume_queue_units_per_segment,
                      "clean_interval_ms": config.clean_resource_interval_ms,
                      "disk_used_ratio": round(min(max(store.disk_used_ratio(), 0.0), 1.0), 4),
                      "commitlog_max_offset": store.get_commit_log_max_offset(),
                      "commitlog_flushed_offset": store.flushed_offset},
            "registry": {"channel_expired_timeout_ms": broker_config.channel_expired_timeout_ms,
                         "channel_scan_interval_ms": broker_config.channel_scan_interval_ms},
        }

    def configure(self, settings: dict[str, Any]) -> dict[str, Any]:
        previous = self._on_loop(lambda: apply_settings(self.servers.broker, settings))
        self._settings.update(settings)
        return previous

    def manual_delete(self) -> None:
        self._on_loop(self.servers.broker.store.request_manual_delete)

    def run_retention(self) -> None:
        """A manual clean run now, as the in-process reference's (``Broker.run_retention(manual=True)``)."""
        self._on_loop(lambda: self.servers.broker.run_retention(manual=True))

    def tear_and_restart(self, commit_log_offset: int) -> None:
        # Checked on the live store first, so that an offset where no record starts refuses before anything is
        # killed (a check in the same loop callback as the kill: no append comes in between).
        def tear() -> None:
            if self.servers.broker.store.look_message_by_offset(commit_log_offset) is None:
                raise ValueError(f"commit_log_offset {commit_log_offset}: no record starts there")
            try:
                self.servers.restart_broker(kill=True, tear_at=commit_log_offset)
            finally:
                self._reapply()

        self._on_loop(tear)

    def fresh_restart(self) -> None:
        def fresh() -> None:
            self.servers.restart_broker(kill=True, wipe=True)
            self._reapply()

        self._on_loop(fresh)

    def trace_since(self, start: int) -> tuple[list[dict[str, Any]], int, int]:
        """The trace rows numbered ``start`` on (read on the loop, which writes them)."""
        if self.ring is None:
            raise RuntimeError("this runner keeps no trace")
        ring = self.ring
        return self._on_loop(lambda: ring.since(start))

    def restart(self, kill: bool) -> None:
        def restart() -> None:
            self.servers.restart_broker(kill)
            self._reapply()

        self._on_loop(restart)

    def _reapply(self) -> None:
        """Settings changed through the channel outlive a restart, as RocketMQ's do (UPDATE_BROKER_CONFIG
        writes them to the broker's configuration file)."""
        if self._settings:
            apply_settings(self.servers.broker, self._settings)

    def expire_and_clean(self) -> int:
        return self._on_loop(self.servers.expire_retention)

    def race_pull(self, topic: str, queue_id: int, sends: list[tuple[bytes, str | None]]) -> None:
        """Store ``sends`` in the queue between the lookup and the hold of its next pull (RocketMQ #7358's
        interleaving, which the loop otherwise never produces: one request is handled in one turn)."""

        def arm() -> None:
            self.servers.handlers.races[(topic, queue_id)] = list(sends)

        self._on_loop(arm)

    def advance(self, ms: int) -> tuple[int, int]:
        """Move the simulated clock ``ms`` forward, but stop at the first instant at which a held request was
        answered: (the time now, the late answers written). Over a wire the client cannot tell when an answer
        was written; stopping there tells it (the instant is the one it reads back), so a held request's
        ``held_ms`` is exact, as in-process."""
        clock = self.sim_clock
        if clock is None:
            raise RuntimeError("the broker runs on real time; start it with --sim-clock")
        servers = self.servers

        def answered() -> int:
            return servers.broker_service.late_answers + sum(front.late_answers for front in servers.fronts)

        def advance() -> tuple[int, int]:
            end, before = clock.now_ms() + ms, answered()
            while answered() == before:
                due = clock.next_due_ms()
                if due is None or due > end:
                    clock.run_until(end)
                    break
                clock.run_until(due)
            return clock.now_ms(), answered() - before

        return self._on_loop(advance)

    def _on_loop(self, call: Callable[[], T]) -> T:
        async def run() -> T:
            return call()

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(timeout=LOOP_OPERATION_TIMEOUT_S)


async def start_remoting(
    broker_host: BrokerHost, host: str, namesrv_port: int, broker_port: int = 0,
    queue_nums: int = AUTO_CREATE_QUEUE_NUMS, max_frame_bytes: int = MAX_FRAME_BYTES,
    acl: AccessValidator | None = None,
) -> RemotingServers:
    """Bind both ports, open the broker on ``broker_host`` (its STOREHOST is the bound address), serve. Must
    run on the loop that will serve. ``acl``: check every broker request (RocketMQ ACL 1.0; the name server,
    as RocketMQ's, checks none)."""
    broker_sock = bind_socket(host, broker_port)
    namesrv_sock = bind_socket(host, namesrv_port)
    advertised = advertised_host(host)
    broker_addr = (advertised, broker_sock.getsockname()[1])
    broker = broker_host.open(store_host=broker_addr)
    handlers = BrokerRequestHandlers(broker, broker_addr, acl)
    name_server = NameServer(broker, f"{broker_addr[0]}:{broker_addr[1]}", queue_nums)
    broker_service = TcpService(handlers.dispatch, handlers.channel_closed, max_frame_bytes)
    namesrv = TcpService(name_server.dispatch, None, max_frame_bytes)
    await broker_service.start(broker_sock)
    _, ns_port = await namesrv.start(namesrv_sock)
    return RemotingServers(broker_host, handlers, namesrv, broker_service, (advertised, ns_port), broker_addr,
                           name_server)


def serve_remoting(broker_host: BrokerHost, host: str, namesrv_port: int, broker_port: int = 0,
                   queue_nums: int = AUTO_CREATE_QUEUE_NUMS, extension: Extension | None = None,
                   acl: AccessValidator | None = None, fronts: Sequence[FrontStarter] = ()) -> None:
    """Serve until SIGINT/SIGTERM, printing the name server's address line once listening (followed by what
    ``extension`` appends, e.g. a control channel's address, which it stops when serving ends). ``fronts``: more
    fronts on the same broker and loop (``reference.net.fronts``), each announced by its own serving line after
    the remoting one."""
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s", stream=sys.stderr)

    async def main() -> None:
        servers = await start_remoting(broker_host, host, namesrv_port, broker_port, queue_nums, acl=acl)
        ns_host, ns_port = servers.namesrv_addr
        b_host, b_port = servers.broker_addr
        served: list[ServedFront] = [await start(broker_host) for start in fronts]
        servers.fronts.extend(served)
        suffix, stop_extension = extension(servers) if extension is not None else ("", _nothing)
        print(f"mqtck broker: broker at {b_host}:{b_port}", file=sys.stderr, flush=True)
        print(f"mqtck broker: serving remoting://{ns_host}:{ns_port}{suffix}", flush=True)
        for front in served:
            print(f"mqtck broker: serving {front.url}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        try:
            await stop.wait()
        finally:
            stop_extension()
            for front in served:
                await front.close()
            await servers.close()

    asyncio.run(main())


def _nothing() -> None:
    return None
