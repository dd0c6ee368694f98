"""The reference remoting broker on a background asyncio thread, recording its trace in memory.

Client conformance needs the broker in-process: the harness prepares scenarios through the core directly
(create topics, store messages, preset a group's offset) and judges from the trace rows, with no admin
protocol in between. Everything that touches the broker runs on its loop (:meth:`BrokerThread.call`), so
the broker stays single-threaded as in ``mqtck broker``.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from reference.broker.broker import Broker
from reference.broker.config import BrokerConfig
from reference.broker.host import BrokerHost
from reference.clock import RealClock
from reference.net.remoting.server import RemotingServers, start_remoting
from reference.store.config import MessageStoreConfig
from reference.trace import MemorySink, Trace

T = TypeVar("T")
#: Wait for the loop to run one call.
CALL_TIMEOUT_S = 30.0
#: How long :meth:`BrokerThread.settle` waits for clients' connections to close after their process ended.
SETTLE_TIMEOUT_S = 5.0
#: Poll period of :meth:`BrokerThread.settle`.
SETTLE_POLL_S = 0.05
#: Commit-log segment size of the client check's broker (RocketMQ's default is 1 GiB, the reference's 64 MiB):
#: small, so the retention scenario's few thousand messages span many segments and expiring all but the last
#: moves a queue's min offset past a slow consumer.
SEGMENT_BYTES = 64 << 10


class BrokerThread:
    """Start with :meth:`start`; ``namesrv`` is the address clients are configured with."""

    def __init__(self, data_dir: Path, *, long_polling: bool = True, run: str = "client-check",
                 channel_expired_ms: int | None = None, channel_scan_ms: int | None = None) -> None:
        self.data_dir = data_dir
        self.sink = MemorySink()
        self.clock = RealClock()
        self.trace = Trace(self.sink, run=run, clock=self.clock)
        self._config = BrokerConfig(long_polling_enable=long_polling)
        if channel_expired_ms is not None:  # how soon a silent client is dropped (and its v5 messages given back)
            self._config.channel_expired_timeout_ms = channel_expired_ms
        if channel_scan_ms is not None:
            self._config.channel_scan_interval_ms = channel_scan_ms
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="client-check-broker", daemon=True)
        self._servers: RemotingServers | None = None
        self._host: BrokerHost | None = None
        #: Fronts started beside remoting (:meth:`start_front`), closed first.
        self._fronts: list[Any] = []
        self.namesrv = ""

    def start(self) -> BrokerThread:
        self._thread.start()

        host = BrokerHost(self.data_dir, self.clock, config=self._config, trace=self.trace,
                          store_config=MessageStoreConfig(commit_log_segment_bytes=SEGMENT_BYTES))
        self._host = host
        future = asyncio.run_coroutine_threadsafe(start_remoting(host, "127.0.0.1", 0), self._loop)
        self._servers = future.result(timeout=CALL_TIMEOUT_S)
        host, port = self._servers.namesrv_addr
        self.namesrv = f"{host}:{port}"
        return self

    @property
    def broker(self) -> Broker:
        assert self._servers is not None, "start() first"
        return self._servers.broker

    @property
    def address(self) -> tuple[str, int]:
        """The broker's own (host, port); clients learn it from the name server at :attr:`namesrv`."""
        return self._running().broker_addr

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn(*args, **kwargs)`` on the broker's loop and return its result."""
        async def run() -> T:
            return fn(*args, **kwargs)

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout=CALL_TIMEOUT_S)

    def restart(self) -> None:
        """Restart the broker cleanly on the same data and address (offsets persisted; connections closed, so held
        pulls are dropped and clients must reconnect and register again); the trace gets CRASH and RESTART."""
        self.call(lambda: self._running().restart_broker(kill=False))

    def expire_retention(self) -> int:
        """Every commit-log segment but the one being written expires and is deleted, consume queues and min
        offsets corrected: how many segments went."""
        return self.call(lambda: self._running().expire_retention())

    def _running(self) -> RemotingServers:
        assert self._servers is not None, "start() first"
        return self._servers

    def connections(self) -> frozenset[object]:
        """The connections to the broker open now (to wait, with :meth:`settle`, for just these to close)."""
        return self.call(lambda: frozenset(self._servers.broker_service.connections) if self._servers else frozenset())

    def settle(self, timeout_s: float = SETTLE_TIMEOUT_S, among: frozenset[object] | None = None) -> bool:
        """Wait until no connection to the broker is open (or none of ``among``); False if one still is after
        ``timeout_s``.

        A client's last requests may still be unread when its process has exited: the Java client persists its
        offsets at shutdown with oneway UPDATE_CONSUMER_OFFSET frames and exits without waiting, and a killed
        client's last pull may be in the socket. The broker reads every frame of a connection before its end, so
        once all are closed, everything sent is in the trace, and a check judges what the client did, not how fast
        the broker read it."""
        def waited_for() -> frozenset[object]:
            now = self.connections()
            return now if among is None else now & among

        deadline = time.monotonic() + timeout_s
        while waited_for():
            if time.monotonic() >= deadline:
                return False
            time.sleep(SETTLE_POLL_S)
        return True

    def rows(self, start: int = 0) -> list[dict[str, Any]]:
        """A snapshot of the trace rows so far, from the ``start``-th on (the sink only ever appends)."""
        return self.call(lambda: self.sink.rows[start:])

    def start_front(self, start: Callable[[BrokerHost], Coroutine[Any, Any, T]]) -> T:
        """Start another front (the gRPC one: ``reference.net.grpc.server.start_grpc``) on the broker's loop over
        the same broker, so the POP client check judges v5 clients from the same trace; closed by :meth:`close`."""
        assert self._host is not None, "start() first"
        front: T = asyncio.run_coroutine_threadsafe(start(self._host), self._loop).result(timeout=CALL_TIMEOUT_S)
        self._fronts.append(front)
        return front

    def close(self) -> None:
        for front in self._fronts:
            asyncio.run_coroutine_threadsafe(front.close(), self._loop).result(timeout=CALL_TIMEOUT_S)
        self._fronts.clear()
        if self._servers is not None:
            asyncio.run_coroutine_threadsafe(self._servers.close(), self._loop).result(timeout=CALL_TIMEOUT_S)
            self._servers = None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=CALL_TIMEOUT_S)
        self._loop.close()
