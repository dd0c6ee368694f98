"""PopConnection: one POP client's connection to its broker.

Theory of operation
-------------------
The client core never waits: a pop is sent with a callback; the broker answers at once or holds
the pop (long polling) and answers later through this connection (``deliver_pop``). Either way the
callback runs on a later turn of the clock, never inside the call that sent the pop, so client code
is never re-entered from inside the broker. A pop not answered within its poll time plus
``request_timeout_ms`` (the broker restarted and forgot it, say) is failed with TIMEOUT; an answer
that comes after that is ignored (its messages stay invisible and are revived in time).

The broker is reached through a *host* whose ``broker`` is None while it is down: every call then
fails with CONNECTION_REFUSED. A refused request surfaces as :class:`ClientError` with the broker's
error code (``INVALID_RECEIPT_HANDLE``, ...).

The connection is also the channel the broker's consumer registry knows the client by.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any, Protocol

from reference.broker.pop.protocol import PopMessageRequest, PopResponse
from reference.clock import Clock, TimerHandle
from reference.rules.errors import InvalidRequest

CONNECTION_REFUSED = "CONNECTION_REFUSED"
TIMEOUT = "TIMEOUT"


class ClientError(Exception):
    """A call that did not succeed: ``code`` is the broker's error code or a transport condition."""

    def __init__(self, code: str, message: str = "") -> None:
        super().__init__(f"{code}: {message}" if message else code)
        self.code = code


class BrokerHost(Protocol):
    """Where the broker is: ``broker`` is None while it is down (a restart replaces it)."""

    @property
    def broker(self) -> Any: ...


class StaticHost:
    """A broker that is always up."""

    def __init__(self, broker: Any) -> None:
        self.broker = broker


#: A pop's completion: exactly one of (response, None) or (None, error).
PopCallback = Callable[[PopResponse | None, ClientError | None], None]


class PopConnection:
    _ids = itertools.count(1)

    def __init__(self, host: BrokerHost, clock: Clock, client_id: str) -> None:
        self.host = host
        self.clock = clock
        self.client_id = client_id
        self.key = f"{client_id}#conn{next(self._ids)}"
        self._held: dict[int, tuple[PopMessageRequest, PopCallback, TimerHandle]] = {}
        self._closed = False
        self.on_ids_changed: Callable[[str], None] | None = None

    def broker(self) -> Any:
        broker = self.host.broker
        if broker is None or self._closed:
            raise ClientError(CONNECTION_REFUSED, "the broker is down")
        return broker

    def call(self, method: str, *args: Any) -> Any:
        """A synchronous call of ``broker.<method>(*args)``; refusals become ClientError."""
        try:
            return getattr(self.broker(), method)(*args)
        except InvalidRequest as exc:
            raise ClientError(exc.code, f"{exc.field}: {exc.rule}") from None

    def pop(self, request: PopMessageRequest, callback: PopCallback, request_timeout_ms: int) -> None:
        """Send a pop; ``callback`` runs once, later: with the answer, or with an error."""
        try:
            response = self.call("pop", request, self)
        except ClientError as exc:
            self._later(callback, None, exc)
            return
        if response is not None:
            self._later(callback, response, None)
            return
        token = id(request)
        timer = self.clock.call_later(
            request.poll_time_ms + request_timeout_ms, lambda: self._timeout(token)
        )
        self._held[token] = (request, callback, timer)

    def _timeout(self, token: int) -> None:
        entry = self._held.pop(token, None)
        if entry is not None:
            entry[1](None, ClientError(TIMEOUT, "no answer to the pop"))

    def _later(self, callback: PopCallback, response: PopResponse | None, error: ClientError | None) -> None:
        self.clock.call_later(0, lambda: None if self._closed else callback(response, error))

    # -- the channel the broker answers through ------------------------------------------------
    def deliver_pop(self, request: PopMessageRequest, response: PopResponse) -> None:
        entry = self._held.pop(id(request), None)
        if entry is None or entry[0] is not request:
            return  # timed out, or closed: too late
        entry[2].cancel()
        self._later(entry[1], response, None)

    def deliver_pull(self, request: object, response: object) -> None:  # a POP client never pulls
        pass

    def notify_consumer_ids_changed(self, group: str) -> None:
        if self.on_ids_changed is not None:
            listener = self.on_ids_changed
            self.clock.call_later(0, lambda: None if self._closed else listener(group))

    def close(self) -> None:
        """Forget held pops (their callbacks never run); later answers are ignored."""
        self._closed = True
        for _request, _callback, timer in self._held.values():
            timer.cancel()
        self._held.clear()
