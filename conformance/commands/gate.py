"""``mqtck gate NAME``: install a peer if needed, start it, run the conformance suite against it with its
reviewed expectations, stop it, write the usual reports.

Exit 0 when every applicable MUST passes or is an expected fail, 1 otherwise, 2 when the peer cannot be had
or started (one line: unknown name, Maven or Java missing, registry unreachable, port busy, never
registered). Progress goes to stderr as plain lines, so a CI log shows where the time went.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time

from conformance import expectations
from conformance.cli import UsageError, build_parser
from conformance.cliargs import report_dir
from conformance.peers import PeerError, peer_info


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("gate", help="start a real peer, run the conformance suite against it, stop it",
                       description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("name", help="a peer of `mqtck peer list`, e.g. rocketmq-4.9.7")
    p.add_argument("--report-dir", default="reports", type=report_dir,
                   help="where the run is written (default: reports)")
    p.add_argument("--junit", default=None, help="also write the JUnit XML here")
    p.add_argument("--only", nargs="+", default=None, metavar="ID", help="run only tests of these requirement IDs")
    p.add_argument("-n", "--workers", type=int, default=1,
                   help="parallel workers for the tests that leave the broker as it is (default 1); those that "
                        "restart it, run its retention or change its settings always run alone, afterwards")
    p.add_argument("--json", action="store_true", help="print summary.json to stdout instead of a table")
    p.add_argument("--no-expect", action="store_true",
                   help="ignore the peer's reviewed expectations (every failure gates)")
    p.set_defaults(func=run)


def _say(text: str) -> None:
    print(f"mqtck gate: {text}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    from conformance.peers.maven import rocketmq_classpath
    from conformance.peers.rocketmq import served

    if args.workers < 1:
        raise UsageError("-n/--workers must be >= 1")
    started = time.monotonic()
    stack = contextlib.ExitStack()
    try:
        info = peer_info(args.name)
        _say(f"resolving {info.name} ({', '.join(info.artifacts)})")
        rocketmq_classpath(info.version)
        _say(f"starting {info.name}")
        target = stack.enter_context(served(info))
    except PeerError as exc:
        raise UsageError(str(exc)) from None
    _say(f"{info.name} ready at {target} after {time.monotonic() - started:.1f} s; running the suite")
    conform = ["conform", "--target", target, "--report-dir", args.report_dir, "--implementation", info.name,
               "--workers", str(args.workers)]
    if not args.no_expect and info.name in expectations.known():
        conform += ["--expect", info.name]
    if args.junit:
        conform += ["--junit", args.junit]
    if args.only:
        conform += ["--only", *args.only]
    if args.json:
        conform.append("--json")
    with stack:
        parsed = build_parser().parse_args(conform)
        code = int(parsed.func(parsed))
    _say(f"{info.name}: exit {code}, {time.monotonic() - started:.1f} s wall time, start and stop included")
    return code
