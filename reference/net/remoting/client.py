"""A small blocking remoting client: one TCP connection, requests matched to responses by ``opaque``.

Who uses it: the ``remoting://`` conformance target, the client-conformance harness (to prepare scenarios
and to run the deliberately broken test clients) and tests. It speaks the wire exactly as
protocols/rocketmq-remoting.md describes the C++ client (§1, §2): JSON header, serialize type 0, requests
pipelined on one connection, ``opaque`` counting up per connection.

Why a reader thread: the broker answers a suspended PULL_MESSAGE long after it was sent, and meanwhile
sends its own requests on the same connection (NOTIFY_CONSUMER_IDS_CHANGED, §5.12). The thread reads every
frame in order: responses complete the waiting :class:`~concurrent.futures.Future`, server requests are
recorded in :attr:`RemotingClient.server_requests` (in arrival order, so a notification the broker wrote
before a response is recorded before that response's future completes) and answered unless oneway.
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any

from reference.net.remoting.acl.signature import SessionCredentials, sign_fields
from reference.net.remoting.command import RemotingCommand, ext_value
from reference.net.remoting.frame import FrameDecoder, FrameError, encode_frame
from reference.rules.codes import ResponseCode

#: What this client writes in ``language``/``version``: the C++ client's values (§0), so a broker under test
#: treats it like the official client.
CLIENT_LANGUAGE = "CPP"
CLIENT_VERSION = 63
#: Default wait for a response: the C++ client's async pull timeout (§7.2), longer than any held pull.
DEFAULT_TIMEOUT_S = 30.0
#: Connect timeout: a target that does not accept within this is unreachable.
CONNECT_TIMEOUT_S = 5.0
_READ_CHUNK = 64 * 1024


def split_address(address: str) -> tuple[str, int]:
    """``host:port`` -> (host, port); ValueError when it is not that shape."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"expected HOST:PORT, got {address!r}")
    return host, int(port)


class RemotingClient:
    """One connection to a name server or broker.

    ``on_request`` answers server-to-client requests (return None for the default: SUCCESS, or nothing
    when the request is oneway). Every server request is also appended to :attr:`server_requests`.
    """

    def __init__(
        self, address: str, *, on_request: Callable[[RemotingCommand], RemotingCommand | None] | None = None,
        connect_timeout_s: float = CONNECT_TIMEOUT_S, credentials: SessionCredentials | None = None,
    ) -> None:
        self.address = address
        #: ACL 1.0: every request is signed with these (as the official clients' RPC hooks sign).
        self.credentials = credentials
        host, port = split_address(address)
        self._sock = socket.create_connection((host, port), timeout=connect_timeout_s)
        self._sock.settimeout(None)
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._on_request = on_request
        self._opaque = itertools.count()
        self._pending: dict[int, Future[RemotingCommand]] = {}
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._closed: BaseException | None = None
        self.server_requests: list[RemotingCommand] = []
        self._server_requests_cond = threading.Condition()
        self._reader = threading.Thread(target=self._read_loop, name=f"remoting-reader-{address}", daemon=True)
        self._reader.start()

    # -- requests ----------------------------------------------------------------------------------
    def invoke_async(
        self, code: int, ext_fields: Mapping[str, Any] | None = None, body: bytes = b"",
    ) -> Future[RemotingCommand]:
        """Send a request; the future completes with its response (ConnectionError if the link drops)."""
        future: Future[RemotingCommand] = Future()
        with self._lock:
            if self._closed is not None:
                raise ConnectionError(f"{self.address}: connection closed ({self._closed})")
            opaque = next(self._opaque)
            self._pending[opaque] = future
        self._write(self._command(code, opaque, 0, ext_fields, body))
        return future

    def invoke(
        self, code: int, ext_fields: Mapping[str, Any] | None = None, body: bytes = b"",
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> RemotingCommand:
        """Send a request and wait for its response (TimeoutError after ``timeout_s``)."""
        return self.invoke_async(code, ext_fields, body).result(timeout=timeout_s)

    def oneway(self, code: int, ext_fields: Mapping[str, Any] | None = None, body: bytes = b"") -> None:
        """Send a request with the ONEWAY flag: the server sends no response."""
        with self._lock:
            opaque = next(self._opaque)
        self._write(self._command(code, opaque, 2, ext_fields, body))

    def wait_server_request(self, predicate: Callable[[RemotingCommand], bool], timeout_s: float) -> bool:
        """Wait until a recorded server request satisfies ``predicate``; False on timeout."""
        with self._server_requests_cond:
            return self._server_requests_cond.wait_for(
                lambda: any(predicate(r) for r in self.server_requests), timeout=timeout_s
            )

    @property
    def closed(self) -> bool:
        return self._closed is not None

    def close(self) -> None:
        """Close the connection; waiting requests fail with ConnectionError."""
        self._fail_all(ConnectionError("closed by the client"))
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()

    # -- plumbing ----------------------------------------------------------------------------------
    def _command(self, code: int, opaque: int, flag: int, ext: Mapping[str, Any] | None,
                 body: bytes) -> RemotingCommand:
        # Signed in the string form the fields travel in (what the broker recomputes the signature over).
        fields = {k: ext_value(v) for k, v in (ext or {}).items() if v is not None}
        if self.credentials is not None:
            fields = sign_fields(fields, body, self.credentials)
        return RemotingCommand(
            code=int(code), opaque=opaque, flag=flag, language=CLIENT_LANGUAGE, version=CLIENT_VERSION,
            ext_fields=fields, body=body,
        )

    def _write(self, cmd: RemotingCommand) -> None:
        data = encode_frame(cmd)
        with self._write_lock:
            try:
                self._sock.sendall(data)
            except OSError as exc:
                self._fail_all(exc)
                raise ConnectionError(f"{self.address}: {exc}") from None

    def _read_loop(self) -> None:
        decoder = FrameDecoder()
        error: BaseException = ConnectionError("connection closed by the server")
        try:
            while True:
                data = self._sock.recv(_READ_CHUNK)
                if not data:
                    break
                for cmd in decoder.feed(data):
                    self._dispatch(cmd)
        except FrameError as exc:
            error = exc
        except OSError as exc:
            error = exc
        self._fail_all(error)

    def _dispatch(self, cmd: RemotingCommand) -> None:
        if cmd.is_response:
            with self._lock:
                future = self._pending.pop(cmd.opaque, None)
            if future is not None and not future.done():
                future.set_result(cmd)
            return
        with self._server_requests_cond:
            self.server_requests.append(cmd)
            self._server_requests_cond.notify_all()
        answer = self._on_request(cmd) if self._on_request is not None else None
        if cmd.is_oneway:
            return
        if answer is None:
            answer = cmd.make_response(ResponseCode.SUCCESS)
        answer.language, answer.version = CLIENT_LANGUAGE, CLIENT_VERSION
        with contextlib.suppress(ConnectionError):
            self._write(answer)

    def _fail_all(self, error: BaseException) -> None:
        with self._lock:
            if self._closed is None:
                self._closed = error
            pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(ConnectionError(f"{self.address}: {error}"))
