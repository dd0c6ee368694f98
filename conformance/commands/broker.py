"""``mqtck broker``: serve the reference broker (JSON Lines on stdin/stdout for now)."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from conformance.cli import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("broker", help="serve the reference broker")
    p.add_argument("--stdio", action="store_true", help="JSON Lines requests on stdin, responses on stdout")
    p.add_argument("--data-dir", required=True, help="store directory (created if missing; recovered if not)")
    p.add_argument("--trace", default=None, help="record a trace here (*.jsonl, *.jsonl.gz or a Parquet dir)")
    p.add_argument("--segment-bytes", type=int, default=None, help="commit-log segment size")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from reference.broker.broker import Broker
    from reference.clock import RealClock
    from reference.net.stdio import serve_stdio
    from reference.store.config import MessageStoreConfig
    from reference.trace import Trace, sink_for

    if not args.stdio:
        raise UsageError("choose a transport: --stdio")
    data_dir = Path(args.data_dir)
    if data_dir.exists() and not data_dir.is_dir():
        raise UsageError(f"--data-dir {data_dir} is not a directory")
    store_config = MessageStoreConfig()
    if args.segment_bytes is not None:
        if args.segment_bytes < 4096:
            raise UsageError("--segment-bytes must be >= 4096")
        store_config.commit_log_segment_bytes = args.segment_bytes
    clock = RealClock()
    trace = Trace(sink_for(args.trace), run=f"broker-{data_dir.name}", clock=clock) if args.trace else None
    broker = Broker(data_dir, clock, store_config=store_config, trace=trace)
    try:
        asyncio.run(serve_stdio(broker))
    finally:
        if trace is not None:
            trace.end()
    return 0
