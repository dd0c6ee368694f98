"""The ``MessagingService`` servicer: each RPC to its handler, and every refusal answered in one place.

The tables say which handler answers which RPC; the wrappers read the client id from the metadata, call the
handler on the serving loop (the core is single-threaded: grpc.aio runs every handler on the loop that drives the
broker's clock and its other fronts) and turn a refusal (:class:`~reference.rules.errors.InvalidRequest`) into the
response's ``status`` by :mod:`reference.net.grpc.codes`. Nothing reaches gRPC as an error: a bug of the reference is
an INTERNAL_SERVER_ERROR status naming the exception (and logged with its traceback), never gRPC INTERNAL or a
dropped stream.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from reference.net.grpc import ack, fifo, receive, refused, route, send
from reference.net.grpc.clients import client_id_of
from reference.net.grpc.codes import INTERNAL_SERVER_ERROR, NOT_IMPLEMENTED, OK, refusal_status, status
from reference.net.grpc.state import FrontState
from reference.net.grpc.telemetry import answer_settings
from reference.rules.errors import InvalidRequest

log = logging.getLogger("mqtck.grpc")

Handler = Callable[[FrontState, Any, str], Any]
Unary = Callable[[Any, Any], Awaitable[Any]]

#: Unary RPC -> (its handler, its response message's name).
UNARY: dict[str, tuple[Handler, str]] = {
    "QueryRoute": (route.query_route, "QueryRouteResponse"),
    "Heartbeat": (route.heartbeat, "HeartbeatResponse"),
    "QueryAssignment": (route.query_assignment, "QueryAssignmentResponse"),
    "NotifyClientTermination": (route.notify_client_termination, "NotifyClientTerminationResponse"),
    "SendMessage": (send.send_message, "SendMessageResponse"),
    "AckMessage": (ack.ack_message, "AckMessageResponse"),
    "ChangeInvisibleDuration": (ack.change_invisible_duration, "ChangeInvisibleDurationResponse"),
    "ForwardMessageToDeadLetterQueue": (ack.forward_to_dead_letter_queue, "ForwardMessageToDeadLetterQueueResponse"),
}
#: Unary RPCs refused with NOT_IMPLEMENTED (reference.net.grpc.refused says why) -> their response's name.
REFUSED: dict[str, str] = {
    "EndTransaction": "EndTransactionResponse",
    "RecallMessage": "RecallMessageResponse",
    "SyncLiteSubscription": "SyncLiteSubscriptionResponse",
    "UpdateOffset": "UpdateOffsetResponse",
    "GetOffset": "GetOffsetResponse",
    "QueryOffset": "QueryOffsetResponse",
}


def _internal(state: FrontState, rpc: str, exc: Exception) -> Any:
    log.exception("%s failed", rpc)
    return status(state.definition, INTERNAL_SERVER_ERROR, f"{rpc}: {type(exc).__name__}: {exc}")


class MessagingServicer:
    """An object with one coroutine per MessagingService RPC, for ``add_MessagingServiceServicer_to_server``."""

    def __init__(self, state: FrontState) -> None:
        self.state = state
        for rpc, (handler, response) in UNARY.items():
            setattr(self, rpc, self._unary(rpc, handler, response))
        for rpc, response in REFUSED.items():
            setattr(self, rpc, self._refused(rpc, response))

    def _unary(self, rpc: str, handler: Handler, response: str) -> Unary:
        state = self.state

        async def call(request: Any, context: Any) -> Any:
            answer = getattr(state.service, response)
            try:
                return handler(state, request, client_id_of(context.invocation_metadata()))
            except InvalidRequest as exc:
                return answer(status=refusal_status(state.definition, exc))
            except Exception as exc:  # a bug of the reference, said as one; the client's call still completes
                return answer(status=_internal(state, rpc, exc))

        return call

    def _refused(self, rpc: str, response: str) -> Unary:
        state = self.state

        async def call(request: Any, context: Any) -> Any:
            return getattr(state.service, response)(status=status(state.definition, NOT_IMPLEMENTED,
                                                                  refused.reason(rpc)))

        return call

    async def ReceiveMessage(self, request: Any, context: Any) -> AsyncIterator[Any]:  # noqa: N802 (the RPC's name)
        state = self.state
        try:
            remaining = context.time_remaining()
            remaining_ms = int(remaining * 1000) if remaining is not None else None
            client_id = client_id_of(context.invocation_metadata())
            async for response in receive.receive_message(state, request, client_id, remaining_ms):
                yield response
            return
        except InvalidRequest as exc:
            refusal = refusal_status(state.definition, exc)
        except Exception as exc:  # a bug of the reference: a status, then the stream ends as it should
            refusal = _internal(state, "ReceiveMessage", exc)
        yield state.service.ReceiveMessageResponse(status=refusal)
        yield receive.delivery_timestamp(state)

    async def PullMessage(self, request: Any, context: Any) -> AsyncIterator[Any]:  # noqa: N802
        state = self.state
        yield state.service.PullMessageResponse(status=status(state.definition, NOT_IMPLEMENTED,
                                                              refused.reason("PullMessage")))

    async def Telemetry(self, commands: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:  # noqa: N802
        """Answer each settings command with the server's view; other commands (thread stack traces, verify
        results) need no answer. The stream stays open until the client ends it."""
        state = self.state
        d = state.definition
        try:
            client = state.registry.client(client_id_of(context.invocation_metadata()))
        except InvalidRequest as exc:
            yield state.service.TelemetryCommand(status=refusal_status(d, exc))
            return
        async for command in commands:
            if not command.HasField("settings"):
                continue
            try:
                settings = answer_settings(d, state.registry, client, command.settings,
                                           state.broker.store.config.max_message_size, fifo.settings_fifo(state))
                yield state.service.TelemetryCommand(status=status(d, OK), settings=settings)
            except InvalidRequest as exc:
                yield state.service.TelemetryCommand(status=refusal_status(d, exc))
            except Exception as exc:  # a bug of the reference; the stream stays open
                yield state.service.TelemetryCommand(status=_internal(state, "Telemetry", exc))
