"""``mqtck bench pop-wake``: how fast a held RocketMQ 5 ReceiveMessage is woken by a send, over gRPC (issue 38).

A v5 consumer's ReceiveMessage is a POP held by the broker's long polling (seed 004 §3.2.1 step 6) until a
message arrives or its long-polling timeout ends. For each target in one run (the reference, ``mqtck broker
--remoting --grpc`` on real time as users run it, launched by the bench unless ``--no-reference``; each
``--target LABEL=grpc://HOST:PORT``, e.g. the real proxy of ``mqtck peer run rocketmq-proxy-5.5.0``), every round
starts a receive on an empty topic with a long-polling timeout of :data:`POLL_S`, waits :data:`HOLD_WAIT_S` so
that the broker holds it, then sends one message over gRPC and measures from the moment the send is issued to the
moment the message arrives on the receive's stream (the send's own handling included), then acknowledges it.
Reported per target: p50, p99 and max in milliseconds, and the rounds whose message came only after the wake
bound or not at all. A timing goal, so a bench, never a test.
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
TOPIC, GROUP = "mqtck_pop_wake", "mqtck_pop_wake_group"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rounds", type=int, default=200, help="held receives woken per target (default 200)")
    p.add_argument("--target", action="append", default=[], metavar="LABEL=grpc://HOST:PORT",
                   help="another gRPC endpoint to measure, e.g. proxy-5.5.0=grpc://127.0.0.1:8081 (repeatable)")
    p.add_argument("--no-reference", action="store_true", help="do not launch and measure the reference")


def _targets(texts: list[str]) -> list[tuple[str, str]]:
    out = []
    for text in texts:
        label, sep, url = text.partition("=")
        if not sep or not label or not url.startswith("grpc://") or ":" not in url.removeprefix("grpc://"):
            raise UsageError(f"--target {text!r}: expected LABEL=grpc://HOST:PORT")
        out.append((label, url.removeprefix("grpc://")))
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.rounds < 1:
        raise UsageError(f"--rounds {args.rounds}: must be at least 1")
    targets = _targets(args.target)
    if args.no_reference and not targets:
        raise UsageError("--no-reference: name at least one --target to measure")
    results: dict[str, Any] = {"rounds": args.rounds, "poll_s": POLL_S, "wake_bound_ms": WAKE_BOUND_MS,
                               "targets": {}}
    if not args.no_reference:
        from conformance.targets.launch import launch_broker

        with tempfile.TemporaryDirectory(prefix="mqtck-pop-wake-") as tmp:
            broker = launch_broker("remoting", Path(tmp), "--grpc", "127.0.0.1:0")
            try:
                assert broker.proc.stdout is not None
                grpc_line = broker.proc.stdout.readline().strip()
                endpoint = grpc_line.rpartition("grpc://")[2]
                results["targets"]["reference"] = asyncio.run(_measure(endpoint, args.rounds))
            finally:
                broker.stop()
    for label, endpoint in targets:
        results["targets"][label] = asyncio.run(_measure(endpoint, args.rounds))
    return results


async def _measure(endpoint: str, rounds: int) -> dict[str, Any]:
    import grpc

    from reference.net.grpc.protos import load

    stubs = load()
    d, s = stubs.definition, stubs.service
    metadata = (("x-mq-client-id", f"mqtck-bench@{uuid.uuid4().hex[:8]}"),)
    async with grpc.aio.insecure_channel(endpoint) as channel:
        stub = stubs.grpc.MessagingServiceStub(channel)
        route = await stub.QueryRoute(s.QueryRouteRequest(topic=d.Resource(name=TOPIC)), metadata=metadata)
        if route.status.code != d.Code.OK:
            raise UsageError(f"{endpoint}: QueryRoute {TOPIC} answered {d.Code.Name(route.status.code)} "
                             f"({route.status.message}); create the topic or enable auto-creation")
        queue = d.MessageQueue(topic=d.Resource(name=TOPIC), id=-1, broker=route.message_queues[0].broker)
        latencies: list[float] = []
        late = lost = 0
        for _ in range(rounds):
            request = s.ReceiveMessageRequest(
                group=d.Resource(name=GROUP), message_queue=queue, batch_size=1,
                filter_expression=d.FilterExpression(type=d.TAG, expression="*"))
            request.invisible_duration.seconds = 30
            request.long_polling_timeout.seconds = POLL_S
            call = stub.ReceiveMessage(request, metadata=metadata, timeout=POLL_S + 10)
            await asyncio.sleep(HOLD_WAIT_S)
            message = d.Message(topic=d.Resource(name=TOPIC), body=b"wake", system_properties=d.SystemProperties(
                message_id=uuid.uuid4().hex.upper(), message_type=d.NORMAL, body_encoding=d.IDENTITY))
            sent_at = time.perf_counter()
            await stub.SendMessage(s.SendMessageRequest(messages=[message]), metadata=metadata)
            got = None
            async for answer in call:
                if answer.WhichOneof("content") == "message":
                    got, woken_ms = answer.message, (time.perf_counter() - sent_at) * 1000
            if got is None:
                lost += 1
                continue
            latencies.append(woken_ms)
            late += woken_ms > WAKE_BOUND_MS
            await stub.AckMessage(s.AckMessageRequest(
                group=d.Resource(name=GROUP), topic=d.Resource(name=TOPIC),
                entries=[s.AckMessageEntry(message_id=got.system_properties.message_id,
                                           receipt_handle=got.system_properties.receipt_handle)]),
                metadata=metadata)
    ordered = sorted(latencies)
    return {"endpoint": endpoint, "woken": len(latencies), "late": late, "not_woken": lost,
            "p50_ms": round(statistics.median(ordered), 2) if ordered else None,
            "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 2) if ordered else None,
            "max_ms": round(ordered[-1], 2) if ordered else None}
