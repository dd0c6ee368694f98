"""The gRPC front and the remoting servers on one broker, on the test's own loop, with a real v5 channel.

Simulated time: a long poll ends by ``clock.advance`` on the broker's SimClock, never by waiting; the only real
waits are for effects on loopback (:func:`until`), bounded by ``EFFECT_WAIT_S``.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from reference.broker.broker import Broker
from reference.broker.host import BrokerHost
from reference.clock import SimClock
from reference.net.grpc import protos
from reference.net.grpc.limits import PROXY_DEFAULTS, ReceiveLimits
from reference.net.grpc.server import GrpcFront, start_grpc
from reference.net.remoting.server import RemotingServers, start_remoting

EFFECT_WAIT_S = 5.0
STUBS = protos.load()
D, S = STUBS.definition, STUBS.service


@dataclass
class Front:
    clock: SimClock
    servers: RemotingServers
    front: GrpcFront
    stub: Any
    client_id: str

    @property
    def broker(self) -> Broker:
        return self.servers.broker

    def md(self, client_id: str | None = None) -> tuple[tuple[str, str], ...]:
        return (("x-mq-client-id", client_id or self.client_id),)

    async def call(self, rpc: str, request: Any, client_id: str | None = None) -> Any:
        return await getattr(self.stub, rpc)(request, metadata=self.md(client_id))

    async def receive(self, request: Any, client_id: str | None = None) -> list[Any]:
        return [r async for r in self.stub.ReceiveMessage(request, metadata=self.md(client_id))]

    async def route(self, topic: str) -> Any:
        return await self.call("QueryRoute", S.QueryRouteRequest(topic=D.Resource(name=topic)))

    async def send(self, topic: str, body: bytes, tag: str | None = None, **system: Any) -> Any:
        fields = {"message_id": uuid.uuid4().hex.upper(), "message_type": 1, "body_encoding": 1, **system}
        props = D.SystemProperties(**fields)
        if tag is not None:
            props.tag = tag
        message = D.Message(topic=D.Resource(name=topic), body=body, system_properties=props)
        return await self.call("SendMessage", S.SendMessageRequest(messages=[message]))

    async def until(self, condition: Callable[[], bool]) -> None:
        async with asyncio.timeout(EFFECT_WAIT_S):
            while not condition():
                await asyncio.sleep(0.005)


def receive_request(group: str, topic: str, batch: int = 16, invisible_s: int | None = 30, poll_s: int = 5,
                    expression: str = "*") -> Any:
    request = S.ReceiveMessageRequest(
        group=D.Resource(name=group),
        message_queue=D.MessageQueue(topic=D.Resource(name=topic), id=0),
        filter_expression=D.FilterExpression(type=1, expression=expression),
        batch_size=batch,
    )
    if invisible_s is not None:
        request.invisible_duration.seconds = invisible_s
    request.long_polling_timeout.seconds = poll_s
    return request


def messages(responses: list[Any]) -> list[Any]:
    return [r.message for r in responses if r.WhichOneof("content") == "message"]


def status_of(responses: list[Any]) -> Any:
    return next(r.status for r in responses if r.WhichOneof("content") == "status")


@contextlib.asynccontextmanager
async def serving(data_dir: Path, clock: SimClock | None = None,
                  limits: ReceiveLimits = PROXY_DEFAULTS) -> AsyncIterator[Front]:
    clock = clock or SimClock()
    host = BrokerHost(data_dir, clock)
    servers = await start_remoting(host, "127.0.0.1", 0)
    front = await start_grpc(host, "127.0.0.1", 0, limits=limits)
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{front.address[1]}")
    try:
        yield Front(clock, servers, front, STUBS.grpc.MessagingServiceStub(channel), "test@1@0@client")
    finally:
        await channel.close()
        await front.close()
        await servers.close()


def run(data_dir: Path, scenario: Callable[[Front], Any], clock: SimClock | None = None,
        limits: ReceiveLimits = PROXY_DEFAULTS) -> None:
    """Run ``scenario(front)`` on a fresh loop against a fresh broker (its gRPC front under ``limits``)."""

    async def main() -> None:
        async with serving(data_dir, clock, limits) as front:
            await scenario(front)

    asyncio.run(main())


async def held(front: Front, request: Any, client_id: str | None = None) -> asyncio.Task[list[Any]]:
    """Start a receive and return once the broker holds it (nothing to pop yet)."""
    polling = front.broker.pop_service.long_polling
    before = polling.held_count()
    task = asyncio.create_task(front.receive(request, client_id))
    await front.until(lambda: polling.held_count() > before or task.done())
    return task


async def receive_now(front: Front, request: Any) -> list[Any]:
    """A receive answered without moving time if anything is there; else its long poll is run out on the broker's
    clock (a test that expects a message then fails on MESSAGE_NOT_FOUND instead of hanging)."""
    task = await held(front, request)
    if not task.done():
        front.clock.advance(request.long_polling_timeout.seconds * 1000)
    return await task
