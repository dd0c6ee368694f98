"""``mqtck bench pop-wake``: how fast a held RocketMQ 5 ReceiveMessage is woken by a send, over gRPC (issue 38).

A v5 consumer's ReceiveMessage is a POP held by the broker's long polling (seed 004 §3.2.1 step 6) until a
message arrives or its long-polling timeout ends. Measured in one run, one after the other: the reference
(``mqtck broker --remoting --grpc`` on real time as users run it, launched by the bench under the receive limits
the real proxy peer runs with, ``REFERENCE_FLAGS``, unless ``--no-reference``); each ``--peer NAME``, a proxy of
``mqtck peer list`` (e.g. rocketmq-proxy-5.5.0) started by the bench; each ``--target
LABEL=grpc://HOST:PORT?remoting=HOST:PORT``, a deployment already running. On each the bench makes its topic and
its consumer through :class:`~conformance.targets.grpc.GrpcTarget` as the suite does (the topic over the
deployment's remoting protocol, the consumer's settings on a Telemetry stream, which the proxy needs before it
answers a ReceiveMessage) and asks for them by the names the target put on the wire. Every round starts a receive
on the empty topic with a long-polling timeout of :data:`POLL_S`, waits :data:`HOLD_WAIT_S` so that the broker
holds it, then sends one message over gRPC and measures from the moment the send is issued to the moment the
message arrives on the receive's stream (the send's own handling included), then acknowledges it. Reported per
target: p50, p99 and max in milliseconds, and the rounds whose message came only after the wake bound or not at
all. A timing goal, so a bench, never a test.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from conformance.cliargs import UsageError

HELP = "POP wake latency over gRPC: a held ReceiveMessage woken by a send, p50/p99 per target (reference, proxy)"
#: The receive's long-polling timeout: longer than any wake, shorter than the client deadline below.
POLL_S = 20
#: How long a round waits after starting the receive before it sends (the hold is not observable from outside).
HOLD_WAIT_S = 0.2
#: A wake slower than this is counted late (the trace audit's long-poll wake bound).
WAKE_BOUND_MS = 1_000
#: How long a new topic may take to be routed: the proxy answers QueryRoute from the name server's route, which
#: the broker inside updates when it registers the topic.
ROUTE_WAIT_S = 30.0
TOPIC, GROUP = "mqtck_pop_wake", "mqtck_pop_wake_group"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rounds", type=int, default=200, help="held receives woken per target (default 200)")
    p.add_argument("--peer", action="append", default=[], metavar="NAME",
                   help="a proxy of `mqtck peer list` to start and measure, e.g. rocketmq-proxy-5.5.0 (repeatable)")
    p.add_argument("--target", action="append", default=[], metavar="LABEL=grpc://HOST:PORT?remoting=HOST:PORT",
                   help="a running deployment to measure: its MessagingService and its name server (repeatable)")
    p.add_argument("--no-reference", action="store_true", help="do not launch and measure the reference")


def _targets(texts: list[str]) -> list[tuple[str, str]]:
    from conformance.targets.registry import parse_target

    out = []
    for text in texts:
        label, sep, url = text.partition("=")
        rule = f"--target {text!r}: expected LABEL=grpc://HOST:PORT?remoting=HOST:PORT"
        if not sep or not label or not url.startswith("grpc://"):
            raise UsageError(rule)
        try:
            parse_target(url)
        except ValueError as exc:
            raise UsageError(f"{rule} ({exc})") from None
        out.append((label, url))
    return out


def _peers(names: list[str]) -> list[Any]:
    """The catalogue entries of ``--peer``: UsageError unless each is a proxy (the bench speaks gRPC only)."""
    from conformance.peers import PeerError, peer_info

    infos = []
    for name in names:
        try:
            info = peer_info(name)
        except PeerError as exc:
            raise UsageError(f"--peer: {exc}") from None
        if info.kind != "proxy":
            raise UsageError(f"--peer {name}: not a proxy; a proxy peer of `mqtck peer list` (it speaks gRPC)")
        infos.append(info)
    return infos


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.rounds < 1:
        raise UsageError(f"--rounds {args.rounds}: must be at least 1")
    targets, peers = _targets(args.target), _peers(args.peer)
    if args.no_reference and not targets and not peers:
        raise UsageError("--no-reference: name at least one --peer or --target to measure")
    results: dict[str, Any] = {"rounds": args.rounds, "poll_s": POLL_S, "wake_bound_ms": WAKE_BOUND_MS,
                               "targets": {}}
    if not args.no_reference:
        from conformance.peers.rocketmq_proxy import REFERENCE_FLAGS
        from conformance.targets.launch import launch_broker

        with tempfile.TemporaryDirectory(prefix="mqtck-pop-wake-") as tmp:
            broker = launch_broker("grpc", Path(tmp) / "data", *REFERENCE_FLAGS)
            try:
                results["targets"]["reference"] = _bench(broker.url, args.rounds)
            finally:
                broker.stop()
    for info in peers:
        from conformance.peers import PeerError
        from conformance.peers.rocketmq_proxy import ProxyPeer

        try:
            with ProxyPeer(info) as peer:
                results["targets"][info.name] = _bench(peer.target, args.rounds)
        except PeerError as exc:
            raise UsageError(f"--peer {info.name}: {exc}") from None
    for label, url in targets:
        results["targets"][label] = _bench(url, args.rounds)
    return results


def _bench(url: str, rounds: int) -> dict[str, Any]:
    """Make the topic and the consumer on the deployment at ``url`` (a ``grpc://…?remoting=…`` target), then
    measure ``rounds`` wakes; the consumer's settings stay held while the target is open."""
    from conformance.targets.grpc import GrpcTarget
    from conformance.targets.registry import parse_target

    spec = parse_target(url)
    target = GrpcTarget(spec.arg, spec.options["remoting"])
    try:
        target.create_topic(TOPIC, 1)
        client_id = target.consumer(GROUP, TOPIC)
        return asyncio.run(_measure(spec.arg, target.wire_name(TOPIC), target.wire_name(GROUP), client_id,
                                    rounds))
    finally:
        target.close()


def summary(endpoint: str, latencies: list[float], lost: int) -> dict[str, Any]:
    """The figures of one target: p50 (the median), p99 (the value below which 99 % of the wakes fall, the
    largest for fewer than 100 rounds), max, and how many came after :data:`WAKE_BOUND_MS` or not at all."""
    ordered = sorted(latencies)
    return {"endpoint": endpoint, "woken": len(ordered), "late": sum(ms > WAKE_BOUND_MS for ms in ordered),
            "not_woken": lost,
            "p50_ms": round(statistics.median(ordered), 2) if ordered else None,
            "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 2) if ordered else None,
            "max_ms": round(ordered[-1], 2) if ordered else None}


async def _measure(endpoint: str, topic: str, group: str, client_id: str, rounds: int) -> dict[str, Any]:
    import grpc

    from reference.net.grpc.protos import load

    stubs = load()
    d, s = stubs.definition, stubs.service
    metadata = (("x-mq-client-id", client_id),)
    async with grpc.aio.insecure_channel(endpoint) as channel:
        stub = stubs.grpc.MessagingServiceStub(channel)
        broker = await _routed(stub, stubs, topic, metadata, endpoint)
        queue = d.MessageQueue(topic=d.Resource(name=topic), id=-1, broker=broker)
        latencies: list[float] = []
        lost = 0
        for _ in range(rounds):
            request = s.ReceiveMessageRequest(
                group=d.Resource(name=group), message_queue=queue, batch_size=1,
                filter_expression=d.FilterExpression(type=d.TAG, expression="*"))
            request.invisible_duration.seconds = 30
            request.long_polling_timeout.seconds = POLL_S
            call = stub.ReceiveMessage(request, metadata=metadata, timeout=POLL_S + 10)
            await asyncio.sleep(HOLD_WAIT_S)
            message = d.Message(topic=d.Resource(name=topic), body=b"wake", system_properties=d.SystemProperties(
                message_id=uuid.uuid4().hex.upper(), message_type=d.NORMAL, body_encoding=d.IDENTITY))
            sent_at = time.perf_counter()
            sent = await stub.SendMessage(s.SendMessageRequest(messages=[message]), metadata=metadata)
            if sent.status.code != d.Code.OK:
                raise RuntimeError(f"{endpoint}: SendMessage answered {d.Code.Name(sent.status.code)} "
                                   f"({sent.status.message})")
            got = None
            async for answer in call:
                if answer.WhichOneof("content") == "message":
                    got, woken_ms = answer.message, (time.perf_counter() - sent_at) * 1000
            if got is None:
                lost += 1
                continue
            latencies.append(woken_ms)
            await stub.AckMessage(s.AckMessageRequest(
                group=d.Resource(name=group), topic=d.Resource(name=topic),
                entries=[s.AckMessageEntry(message_id=got.system_properties.message_id,
                                           receipt_handle=got.system_properties.receipt_handle)]),
                metadata=metadata)
    return summary(endpoint, latencies, lost)


async def _routed(stub: Any, stubs: Any, topic: str, metadata: Any, endpoint: str) -> Any:
    """The broker of ``topic``'s route, asked again until the route exists (within :data:`ROUTE_WAIT_S`)."""
    d, s = stubs.definition, stubs.service
    deadline = time.monotonic() + ROUTE_WAIT_S
    while True:
        route = await stub.QueryRoute(s.QueryRouteRequest(topic=d.Resource(name=topic)), metadata=metadata)
        if route.status.code == d.Code.OK and route.message_queues:
            return route.message_queues[0].broker
        if time.monotonic() > deadline:
            raise RuntimeError(f"{endpoint}: QueryRoute {topic} answered {d.Code.Name(route.status.code)} "
                               f"({route.status.message}) for {ROUTE_WAIT_S:.0f} s after the topic was made")
        await asyncio.sleep(0.5)
