"""``mqtck record``: record a deployment's traffic as a trace (schema v1), from a proxy in front of its name server
(remoting, the default), of its RocketMQ 5 gRPC endpoint (``--protocol grpc``) or of a Pulsar broker's binary
protocol port (``--protocol pulsar``: lookups are rewritten so that clients stay on the proxy) (``conformance/record``).

Point the clients at ``--listen`` instead of the name server (or the gRPC endpoint). Once listening, one line goes
to stdout, ``recording remoting://HOST:PORT -> UPSTREAM into TRACE`` (``grpc://`` with ``--protocol grpc``);
SIGTERM or SIGINT stops it, ends the trace (an END
row per broker) and prints a summary as JSON: the rows written by event, the frames passed on that map to no
trace event (by request code) and the frames that did not decode. Exit 2 with one line for a bad address, a
busy port, or an upstream that refuses connections.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import socket
from typing import TYPE_CHECKING

from conformance.cliargs import UsageError
from reference.clock import RealClock
from reference.trace import Trace, sink_for

if TYPE_CHECKING:
    from conformance.record.grpc_proxy import GrpcRecordingProxy
    from conformance.record.grpc_wire import GrpcRecorder
    from conformance.record.proxy import RecordingProxy
    from conformance.record.pulsar_proxy import PulsarRecordingProxy
    from conformance.record.pulsar_wire import PulsarRecorder
    from conformance.record.wire import WireRecorder

#: How long the name server may take to accept the check connection made before listening.
UPSTREAM_CHECK_TIMEOUT_S = 5.0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("record", help="record clients' remoting, gRPC or Pulsar traffic off the wire into a trace "
                                      "(schema v1)")
    p.add_argument("--protocol", choices=("remoting", "grpc", "pulsar"), default="remoting",
                   help="remoting (4.x and 5.x clients through the name server, the default), grpc (RocketMQ 5 "
                        "v5 clients through the proxy's gRPC endpoint) or pulsar (Pulsar clients through a broker's "
                        "binary protocol port)")
    p.add_argument("--listen", required=True, metavar="HOST:PORT",
                   help="where clients find the name server (or the gRPC endpoint) now (port 0 picks a free one)")
    p.add_argument("--upstream", required=True, metavar="HOST:PORT",
                   help="the real name server (remoting), the real proxy's gRPC endpoint (grpc) or a Pulsar "
                        "broker's service address (pulsar)")
    p.add_argument("--trace", required=True, metavar="OUT",
                   help="the trace to write: *.jsonl or *.jsonl.gz (JSON Lines), else a Parquet directory")
    p.add_argument("--run", default="recorded", help="the trace's run name (default: recorded)")
    p.set_defaults(func=run)


def address(option: str, text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise UsageError(f"{option} {text!r}: expected HOST:PORT")
    return host, int(port)


def run(args: argparse.Namespace) -> int:
    listen, upstream = address("--listen", args.listen), address("--upstream", args.upstream)
    what = {"remoting": "the name server", "grpc": "the gRPC endpoint", "pulsar": "the Pulsar broker"}[args.protocol]
    try:
        socket.create_connection(upstream, timeout=UPSTREAM_CHECK_TIMEOUT_S).close()
    except OSError as exc:
        raise UsageError(f"--upstream {args.upstream}: {what} does not accept connections ({exc})") from None
    trace = Trace(sink_for(args.trace), args.run, RealClock())
    proxy, recorder = _proxy(args.protocol, listen, upstream, trace)

    async def serve() -> None:
        try:
            where = await proxy.start()
        except OSError as exc:
            raise UsageError(f"--listen {args.listen}: {exc.strerror or exc}") from None
        print(f"recording {args.protocol}://{where} -> {args.upstream} into {args.trace}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        await stop.wait()
        await proxy.close()

    try:
        asyncio.run(serve())
    finally:
        if args.protocol == "grpc":
            recorder.finish()  # type: ignore[union-attr]
        trace.end()
    print(json.dumps(recorder.summary(), indent=2))
    return 0


def _proxy(protocol: str, listen: tuple[str, int], upstream: tuple[str, int], trace: Trace) -> tuple[
        RecordingProxy | GrpcRecordingProxy | PulsarRecordingProxy, WireRecorder | GrpcRecorder | PulsarRecorder]:
    """The proxy and recorder for ``protocol``: the remoting proxy in front of a name server, the gRPC one in
    front of a MessagingService endpoint (stubs generated on first use: docs/grpc.md), or the Pulsar one in front
    of a broker (docs/pulsar.md)."""
    if protocol == "pulsar":
        from conformance.record.pulsar_proxy import PulsarRecordingProxy
        from conformance.record.pulsar_wire import PulsarRecorder

        pulsar = PulsarRecorder(trace)
        return PulsarRecordingProxy(listen, upstream, pulsar), pulsar
    if protocol == "remoting":
        from conformance.record.proxy import RecordingProxy
        from conformance.record.wire import WireRecorder

        wire = WireRecorder(trace)
        return RecordingProxy(listen, upstream, wire), wire
    from conformance.record.grpc_proxy import GrpcRecordingProxy
    from conformance.record.grpc_wire import GrpcRecorder
    from reference.net.grpc.protos import load as load_stubs

    stubs = load_stubs()
    recorder = GrpcRecorder(trace, stubs, "broker")
    return GrpcRecordingProxy(listen, upstream, recorder, stubs), recorder
