"""The gRPC recording proxy: ``apache.rocketmq.v2.MessagingService`` forwarded to one upstream endpoint.

Clients are pointed at the proxy instead of the RocketMQ 5 proxy (or the reference's ``--grpc`` front). Every
call is forwarded as it came, message bytes and metadata, over one channel to the upstream; status codes and
details come back unchanged. Two kinds of answer are rewritten, and only in their endpoints: QueryRoute's
message queues and QueryAssignment's assignments name the broker's gRPC endpoints, and a v5 client opens its
sends, receives and telemetry to those endpoints, so they are replaced by the proxy's own address (the upstream
is one endpoint: a LOCAL-mode proxy, or a cluster-mode proxy behind one address).

Each finished call is handed, decoded on a copy, to :class:`~conformance.record.grpc_wire.GrpcRecorder`; the
Telemetry stream's client commands are handed over as they pass (they carry the subscriptions). The proxy is
``grpc.aio``: a held ReceiveMessage (20 s for a push consumer) costs a coroutine, not a thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
import grpc.aio

from conformance.record.grpc_wire import CLIENT_ID_HEADER, GrpcRecorder
from reference.net.grpc.protos import Stubs

SERVICE = "apache.rocketmq.v2.MessagingService"
#: Headers gRPC itself sets on each hop; every other header (the v5 client's x-mq-*, authorization) is forwarded.
HOP_HEADERS = frozenset({"user-agent", "content-type", "te", "grpc-accept-encoding", "grpc-timeout", "grpc-encoding"})


def _identity(data: bytes) -> bytes:
    return data


class GrpcRecordingProxy:
    """Listen on ``listen`` and forward every MessagingService call to ``upstream`` (``HOST:PORT``)."""

    def __init__(self, listen: tuple[str, int], upstream: tuple[str, int], recorder: GrpcRecorder,
                 stubs: Stubs) -> None:
        self.listen, self.upstream = listen, upstream
        self.recorder, self.stubs = recorder, stubs
        self._server: grpc.aio.Server | None = None
        self._channel: grpc.aio.Channel | None = None
        #: The Telemetry streams open upstream: ended by the proxy itself when it closes (see :meth:`close`).
        self._streams: set[Any] = set()
        self._closing = False
        self.address = ""

    async def start(self) -> str:
        """Bind and serve; returns ``HOST:PORT`` (the port picked when 0 was asked). OSError when it can't bind."""
        self._channel = grpc.aio.insecure_channel(f"{self.upstream[0]}:{self.upstream[1]}")
        self._server = grpc.aio.server()
        self._server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, self._handlers()),))
        port = self._server.add_insecure_port(f"{self.listen[0]}:{self.listen[1]}")
        if port == 0:
            raise OSError(f"cannot listen on {self.listen[0]}:{self.listen[1]}")
        self.address = f"{self.listen[0]}:{port}"
        await self._server.start()
        return self.address

    async def close(self, grace_s: float = 1.0) -> None:
        """Stop serving. The clients' Telemetry streams live as long as the clients: a stream still open would be
        cancelled by the server's stop inside grpc, which prints a CancelledError traceback on stderr (a real v5
        client's stream is open whenever it runs). So they are ended here first, each handler returning cleanly."""
        self._closing = True
        for stream in list(self._streams):
            stream.cancel()
        if self._server is not None:
            await self._server.stop(grace_s)
        if self._channel is not None:
            await self._channel.close()

    # -- handlers ------------------------------------------------------------------------------
    def _handlers(self) -> dict[str, grpc.RpcMethodHandler]:
        handlers: dict[str, grpc.RpcMethodHandler] = {}
        for method in self.stubs.service.DESCRIPTOR.services_by_name["MessagingService"].methods:
            name, path = method.name, f"/{SERVICE}/{method.name}"
            if method.client_streaming and method.server_streaming:
                handlers[name] = grpc.stream_stream_rpc_method_handler(self._bidi(path), _identity, _identity)
            elif method.server_streaming:
                handlers[name] = grpc.unary_stream_rpc_method_handler(self._streaming(name, path), _identity,
                                                                       _identity)
            else:
                handlers[name] = grpc.unary_unary_rpc_method_handler(self._unary(name, path), _identity, _identity)
        return handlers

    def _unary(self, name: str, path: str) -> Callable[..., Any]:
        rewrite = self._rewriter(name)

        async def handle(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
            assert self._channel is not None
            call = self._channel.unary_unary(path, _identity, _identity)
            try:
                answer: bytes = await call(request, metadata=_forwarded(context), timeout=context.time_remaining())
            except grpc.aio.AioRpcError as exc:
                await context.abort(exc.code(), exc.details() or "")
            self.recorder.call(name, _client(context), request, [answer])
            return rewrite(answer) if rewrite else answer

        return handle

    def _streaming(self, name: str, path: str) -> Callable[..., AsyncIterator[bytes]]:
        async def handle(request: bytes, context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
            assert self._channel is not None
            call = self._channel.unary_stream(path, _identity, _identity)(
                request, metadata=_forwarded(context), timeout=context.time_remaining())
            answers: list[bytes] = []
            try:
                async for answer in call:
                    answers.append(answer)
                    yield answer
            except grpc.aio.AioRpcError as exc:
                await context.abort(exc.code(), exc.details() or "")
            finally:
                self.recorder.call(name, _client(context), request, answers)

        return handle

    def _bidi(self, path: str) -> Callable[..., AsyncIterator[bytes]]:
        async def handle(requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
            assert self._channel is not None
            client = _client(context)

            async def upward() -> AsyncIterator[bytes]:
                async for command in requests:
                    self.recorder.telemetry_from_client(client, command)
                    yield command

            call = self._channel.stream_stream(path, _identity, _identity)(upward(), metadata=_forwarded(context))
            self._streams.add(call)
            try:
                async for answer in call:
                    yield answer
            except grpc.aio.AioRpcError as exc:
                if exc.code() != grpc.StatusCode.CANCELLED:
                    await context.abort(exc.code(), exc.details() or "")
            except asyncio.CancelledError:
                if not self._closing:
                    raise
            finally:
                self._streams.discard(call)

        return handle

    def _rewriter(self, name: str) -> Callable[[bytes], bytes] | None:
        """The answers whose broker endpoints must point at the proxy (QueryRoute, QueryAssignment)."""
        service = self.stubs.service
        if name == "QueryRoute":
            def queues(raw: bytes) -> bytes:
                resp = service.QueryRouteResponse.FromString(raw)
                for queue in resp.message_queues:
                    self._point_here(queue.broker.endpoints)
                return bytes(resp.SerializeToString())
            return queues
        if name == "QueryAssignment":
            def assignments(raw: bytes) -> bytes:
                resp = service.QueryAssignmentResponse.FromString(raw)
                for assignment in resp.assignments:
                    self._point_here(assignment.message_queue.broker.endpoints)
                return bytes(resp.SerializeToString())
            return assignments
        return None

    def _point_here(self, endpoints: Any) -> None:
        host, _, port = self.address.rpartition(":")
        del endpoints.addresses[:]
        endpoints.addresses.add(host=host, port=int(port))


def _forwarded(context: grpc.aio.ServicerContext) -> tuple[tuple[str, str | bytes], ...]:
    return tuple((k, v) for k, v in (context.invocation_metadata() or ())
                 if not k.startswith(":") and k not in HOP_HEADERS)


def _client(context: grpc.aio.ServicerContext) -> str:
    for key, value in context.invocation_metadata() or ():
        if key == CLIENT_ID_HEADER:
            return value if isinstance(value, str) else value.decode()
    return ""
