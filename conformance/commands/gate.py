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
from conformance.cliargs import UsageError, report_dir
from conformance.peers import PeerError, PeerInfo, peer_info


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("gate", help="start a real peer, run the conformance suite against it, stop it")
    p.add_argument("name", help="a peer of `mqtck peer list`, e.g. rocketmq-4.9.7")
    p.add_argument("--report-dir", default="reports", type=report_dir,
                   help="where the run is written (default: reports)")
    p.add_argument("--junit", default=None, help="also write the JUnit XML here")
    p.add_argument("--only", nargs="+", default=None, metavar="ID", help="run only tests of these requirement IDs")
    p.add_argument("-n", "--workers", type=int, default=1,
                   help="parallel workers for the tests that leave the broker as it is (default 1); those that "
                        "restart it, run its retention or change its settings always run alone, afterwards")
    p.add_argument("--json", action="store_true", help="print summary.json to stdout instead of a table")
    p.add_argument("--slow", action="store_true",
                   help="the slow profile: also judge what takes a real broker minutes with its defaults (a silent "
                        "channel's expiry on 4.x); CI gates real brokers with it")
    p.add_argument("--no-expect", action="store_true",
                   help="ignore the peer's reviewed expectations (every failure gates)")
    p.set_defaults(func=run)


def _say(text: str) -> None:
    print(f"mqtck gate: {text}", file=sys.stderr, flush=True)


def _expect(info: PeerInfo, args: argparse.Namespace) -> str | None:
    """The peer's reviewed expectations, unless ``--no-expect`` or it has none."""
    return None if args.no_expect or info.name not in expectations.known() else info.name


def _gate_strategies(info: PeerInfo, args: argparse.Namespace, started: float) -> int:
    """The Java strategies: golden vectors and properties per strategy, and the broken control."""
    import json
    from pathlib import Path

    from conformance.peers.maven import client_classpath
    from conformance.peers.strategies import command_line, gate_strategies, junit_xml, requirement_entries
    from conformance.report import point_latest, write_junit

    _say(f"resolving {info.name} ({', '.join(info.artifacts)})")
    classpath = client_classpath(info.version)
    verdicts, control = gate_strategies(classpath, say=_say)
    caught = not control.passed
    requirements = requirement_entries(verdicts)
    counts: dict[str, int] = {}
    for entry in requirements:
        counts[entry["status"]] = counts.get(entry["status"], 0) + 1
    passed = sum(v.passed for v in verdicts)
    summary = {"implementation": info.name, "target": f"peer:{info.name}",
               "verdict": "pass" if passed == len(verdicts) and caught else "fail", "counts": counts,
               "duration_s": round(time.monotonic() - started, 1), "requirements": requirements,
               "strategies": [v.to_json() for v in verdicts], "control": {**control.to_json(), "caught": caught},
               "passed": passed, "of": len(verdicts)}
    run_dir = Path(args.report_dir) / f"{time.strftime('%Y%m%d-%H%M%S')}-{info.name}"
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    write_junit(run_dir, junit_xml(classpath, verdicts, control), Path(args.junit) if args.junit else None)
    point_latest(Path(args.report_dir), run_dir)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        for v in verdicts:
            golden = f"{v.golden_lines - len(v.golden_mismatches)}/{v.golden_lines}"
            properties = ", ".join(f"{k} {s}" for k, s in v.properties.items())
            print(f"{'PASS' if v.passed else 'FAIL'}  {v.java_class:40s} golden {golden}  properties {properties}")
            for mismatch in v.golden_mismatches[:3]:
                print(f"      {mismatch}")
            if not v.passed:
                print(f"      reproduce: {command_line(classpath, v)}")
        failed = ", ".join(k for k, s in control.properties.items() if s == "fail") or "nothing"
        print(f"{'CAUGHT' if caught else 'MISSED'}  control {control.java_class}: failed {failed}")
        print(f"{summary['passed']}/{summary['of']} strategies pass; report: {run_dir / 'summary.json'}")
    _say(f"{info.name}: {time.monotonic() - started:.1f} s wall time")
    return 0 if summary["passed"] == summary["of"] and caught else 1


def _gate_client(info: PeerInfo, args: argparse.Namespace, started: float) -> int:
    """A real client: the client check (every scenario) against the reference broker, with its expectations."""
    import tempfile
    from pathlib import Path

    from conformance.peers.clients import client_command
    from conformance.peers.clients_v5 import is_v5, v5_client_command

    home = Path(tempfile.mkdtemp(prefix=f"mqtck-{info.name}-"))
    try:
        _say(f"resolving {info.name} ({', '.join(info.artifacts)})")
        command = (v5_client_command if is_v5(info) else client_command)(info, home)
    except PeerError as exc:
        raise UsageError(str(exc)) from None
    _say(f"{info.name}: running the client check (its files in {home})")
    from conformance.commands.conform import ConformOptions, conform

    code = conform(ConformOptions(client=command, report_dir=args.report_dir, implementation=info.name,
                                  expect=_expect(info, args), junit=args.junit, json=args.json,
                                  client_protocol="grpc" if is_v5(info) else "remoting"))
    _say(f"{info.name}: exit {code}, {time.monotonic() - started:.1f} s wall time")
    return code


def _gate_pulsar_client(info: PeerInfo, args: argparse.Namespace, started: float) -> int:
    """A Pulsar client: its round trip against the reference's Pulsar front, its FLOWs judged from the trace."""
    import json
    from pathlib import Path

    from conformance.peers.pulsar_clients import check, junit_xml
    from conformance.report import point_latest, write_junit

    if args.only:
        raise UsageError("--only: a Pulsar client gate runs its one round trip")
    try:
        _say(f"{info.name}: its round trip against mqtck broker --pulsar ({', '.join(info.artifacts)})")
        doc = check(info)
    except PeerError as exc:
        raise UsageError(str(exc)) from None
    counts: dict[str, int] = {}
    for entry in doc["requirements"]:
        counts[entry["status"]] = counts.get(entry["status"], 0) + 1
    passed = all(entry["status"] == "pass" for entry in doc["requirements"])
    summary = {**doc, "target": f"peer:{info.name}", "verdict": "pass" if passed else "fail", "counts": counts,
               "duration_s": round(time.monotonic() - started, 1)}
    run_dir = Path(args.report_dir) / f"{time.strftime('%Y%m%d-%H%M%S')}-{info.name}"
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    write_junit(run_dir, junit_xml(info.name, doc["requirements"]), Path(args.junit) if args.junit else None)
    point_latest(Path(args.report_dir), run_dir)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        for entry in doc["requirements"]:
            print(f"{entry['status'].upper():5s} {entry['id']} ({entry['level']})")
            for test in entry["tests"]:
                print(f"      {'ok  ' if test['outcome'] == 'passed' else 'FAIL'} {test['nodeid']}: {test['message']}")
        print(f"redelivery counts seen by the client: {doc['observed']['redelivery_counts']}; report: "
              f"{run_dir / 'summary.json'}")
    _say(f"{info.name}: {time.monotonic() - started:.1f} s wall time")
    return 0 if passed else 1


def _gate_pulsar(info: PeerInfo, args: argparse.Namespace, started: float) -> int:
    """The Pulsar standalone: started (its start time and memory said), then the suite over ``pulsar://``."""
    from conformance.peers.maven import pulsar_classpath
    from conformance.peers.pulsar import served as served_pulsar

    stack = contextlib.ExitStack()
    try:
        _say(f"resolving {info.name} ({', '.join(info.artifacts)})")
        pulsar_classpath(info.version)
        _say(f"starting {info.name}")
        peer = stack.enter_context(served_pulsar(info))
    except PeerError as exc:
        raise UsageError(str(exc)) from None
    _say(f"{info.name} ready at {peer.target} after {peer.ready_after_s:.1f} s (RSS {peer.rss_bytes >> 20} MiB); "
         "running the suite")
    from conformance.commands.conform import ConformOptions, conform

    options = ConformOptions(target=peer.target, report_dir=args.report_dir, implementation=info.name,
                             title=info.title or info.name, workers=args.workers, expect=_expect(info, args),
                             junit=args.junit, only=args.only, json=args.json, slow=args.slow)
    with stack:
        code = conform(options)
    _say(f"{info.name}: exit {code}, {time.monotonic() - started:.1f} s wall time, start and stop included")
    return code


def run(args: argparse.Namespace) -> int:
    from conformance.peers.rocketmq import GATE_CHANNEL_EXPIRED_TIMEOUT_MS, RocketMQPeer
    from conformance.peers.serving import install, served

    if args.workers < 1:
        raise UsageError("-n/--workers must be >= 1")
    started = time.monotonic()
    stack = contextlib.ExitStack()
    try:
        info = peer_info(args.name)
        if info.kind == "strategies":
            return _gate_strategies(info, args, started)
        if info.kind == "client" and info.wire == "pulsar":
            return _gate_pulsar_client(info, args, started)
        if info.kind == "client":
            if args.only:
                raise UsageError("--only: a client gate runs every scenario of the client check")
            return _gate_client(info, args, started)
        if info.wire == "pulsar":
            return _gate_pulsar(info, args, started)
        _say(f"resolving {info.name} ({', '.join(info.artifacts)})")
        install(info, sys.stderr)
        _say(f"starting {info.name}")
        expiry = GATE_CHANNEL_EXPIRED_TIMEOUT_MS if RocketMQPeer.settable_channel_expiry(info) else None
        target = stack.enter_context(served(info, channel_expired_timeout_ms=expiry))
    except PeerError as exc:
        raise UsageError(str(exc)) from None
    _say(f"{info.name} ready at {target} after {time.monotonic() - started:.1f} s; running the suite")
    from conformance.commands.conform import ConformOptions, conform

    options = ConformOptions(target=target, report_dir=args.report_dir, implementation=info.name,
                             title=info.title or info.name,
                             workers=args.workers, expect=_expect(info, args), junit=args.junit, only=args.only,
                             json=args.json, slow=args.slow)
    with stack:
        code = conform(options)
    _say(f"{info.name}: exit {code}, {time.monotonic() - started:.1f} s wall time, start and stop included")
    return code
