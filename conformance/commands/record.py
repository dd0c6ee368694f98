"""``mqtck record``: record a deployment's remoting traffic as a trace (schema v1), from a proxy in front of its
name server (``conformance/record``).

Point the clients at ``--listen`` instead of the name server. Once listening, one line goes to stdout,
``recording remoting://HOST:PORT -> UPSTREAM into TRACE``; SIGTERM or SIGINT stops it, ends the trace (an END
row per broker) and prints a summary as JSON: the rows written by event, the frames passed on that map to no
trace event (by request code) and the frames that did not decode. Exit 2 with one line for a bad address, a
busy port, or a name server that refuses connections.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import socket

from conformance.cliargs import UsageError
from reference.clock import RealClock
from reference.trace import Trace, sink_for

#: How long the name server may take to accept the check connection made before listening.
UPSTREAM_CHECK_TIMEOUT_S = 5.0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("record", help="record clients' remoting traffic off the wire into a trace (schema v1)")
    p.add_argument("--listen", required=True, metavar="HOST:PORT",
                   help="where clients find the name server now (port 0 picks a free one)")
    p.add_argument("--upstream", required=True, metavar="HOST:PORT", help="the real name server")
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
    from conformance.record.proxy import RecordingProxy
    from conformance.record.wire import WireRecorder

    listen, upstream = address("--listen", args.listen), address("--upstream", args.upstream)
    try:
        socket.create_connection(upstream, timeout=UPSTREAM_CHECK_TIMEOUT_S).close()
    except OSError as exc:
        raise UsageError(f"--upstream {args.upstream}: the name server does not accept connections ({exc})") from None
    trace = Trace(sink_for(args.trace), args.run, RealClock())
    recorder = WireRecorder(trace)

    async def serve() -> None:
        proxy = RecordingProxy(listen, upstream, recorder)
        try:
            where = await proxy.start()
        except OSError as exc:
            raise UsageError(f"--listen {args.listen}: {exc.strerror or exc}") from None
        print(f"recording remoting://{where} -> {args.upstream} into {args.trace}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        await stop.wait()
        await proxy.close()

    try:
        asyncio.run(serve())
    finally:
        trace.end()
    print(json.dumps(recorder.summary(), indent=2))
    return 0
