"""``mqtck peer``: the real implementations mqtck judges (``list``, ``install NAME``, ``run NAME``).

``run`` serves a peer in the foreground on loopback and prints exactly one line on stdout once it is
usable, ``ready remoting://127.0.0.1:PORT?control=127.0.0.1:CPORT`` (the name server, and the control
channel through which the suite restarts the broker or runs retention); SIGTERM or SIGINT stops it at once and
removes its data (the JVMs are killed: RocketMQ's shutdown hook, 10-19 s, would only flush a store that is then
deleted). Exit 2 with one line when it cannot start.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
from types import FrameType

from conformance.cliargs import UsageError
from conformance.peers import CATALOGUE, PeerError, PeerInfo, peer_info
from conformance.progress import Ticker


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("peer", help="real brokers, clients and strategies to judge: list, install, run")
    verbs = p.add_subparsers(dest="verb", metavar="VERB")
    verbs.required = True
    verbs.add_parser("list", help="one line per known peer: name, kind, version").set_defaults(func=_list)
    inst = verbs.add_parser("install", help="resolve a peer from its registry (Maven Central; crates.io with cargo "
                                            "for rocketmq-rust) into the local cache")
    inst.add_argument("name")
    inst.set_defaults(func=_install)
    r = verbs.add_parser("run", help="serve a peer on loopback in the foreground until SIGTERM/SIGINT")
    r.add_argument("name")
    r.add_argument("--listen", default="127.0.0.1:0", metavar="127.0.0.1:PORT",
                   help="the name server's address (loopback only; port 0 picks a free one)")
    r.add_argument("--verbose", action="store_true", help="echo the JVMs' output on stderr")
    r.set_defaults(func=_run)


def _list(args: argparse.Namespace) -> int:
    for p in CATALOGUE.values():
        print(f"{p.name}\t{p.kind}\t{p.version}\t{p.description}")
    return 0


def _install(args: argparse.Namespace) -> int:
    from conformance.peers.maven import (
        DownloadTally,
        client_classpath,
        pulsar_classpath,
        pulsar_client_classpath,
        server_classpath,
    )

    downloads: list[DownloadTally] = []
    ticker = Ticker("peer install", "Maven downloads")

    def progress(tally: DownloadTally) -> None:
        """A step line when Maven starts, then its downloads as they finish: a first install is tens of MB."""
        if not downloads:
            downloads.append(tally)
            print(f"mqtck peer install: resolving {tally.label} from Maven Central with Maven (a first install "
                  "downloads tens of MB into ~/.m2)", file=sys.stderr, flush=True)
            return
        ticker.advance(f"{tally.bytes / 1e6:.1f} MB, {tally.last_file}")

    try:
        info = peer_info(args.name)
        from conformance.peers.clients_v5 import install_v5, is_v5

        if is_v5(info):
            print(install_v5(info))
            return 0
        if info.artifacts[0].startswith("pypi:") and info.wire == "pulsar":
            raise PeerError(f"{info.name} comes from PyPI, not Maven Central: the dev extra installs it "
                            "(pip install 'pulsar-client==3.13.*')")
        if info.artifacts[0].startswith("pypi:"):
            raise PeerError(f"{info.name} comes from PyPI, not Maven Central: the interop-remoting tox env "
                            "installs it")
        from conformance.peers.rocketmq_rust import install as install_rust
        from conformance.peers.rocketmq_rust import is_rust

        if is_rust(info):
            binaries = install_rust(info, sys.stderr)
            print(f"installed {info.name}: {', '.join(str(b) for b in binaries)}")
            return 0
        if info.artifacts[0].startswith("go:"):
            from conformance.peers.clients import go_subject

            print(f"installed {info.name}: {go_subject(info.version)}")
            return 0
        with ticker:
            if info.wire == "pulsar":
                resolve = pulsar_classpath if info.kind == "broker" else pulsar_client_classpath
                jars = resolve(info.version, progress=progress)
            elif info.kind in ("broker", "proxy"):
                jars = server_classpath(info.kind, info.version, progress=progress)
            else:
                jars = client_classpath(info.version, progress=progress)
    except PeerError as exc:
        raise UsageError(str(exc)) from None
    fetched = f" (downloaded {downloads[0].summary()})" if downloads else " (already cached)"
    print(f"installed {info.name}: {len(jars)} jars{fetched}")
    return 0


def parse_listen(text: str) -> int:
    """The port of a loopback ``127.0.0.1:PORT``; UsageError for anything else (peers never leave loopback)."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise UsageError(f"--listen {text!r}: expected 127.0.0.1:PORT")
    if host not in ("127.0.0.1", "localhost"):
        raise UsageError(f"--listen {text!r}: peers bind loopback only (127.0.0.1)")
    return int(port)


def _run(args: argparse.Namespace) -> int:
    from conformance.peers.serving import served

    port = parse_listen(args.listen)
    try:
        info = peer_info(args.name)
    except PeerError as exc:
        raise UsageError(str(exc)) from None
    if info.wire == "pulsar":
        return _run_pulsar(info, port, args.verbose)
    stop = _stop_on_signals()
    stack = contextlib.ExitStack()
    try:
        target = stack.enter_context(served(info, port, log=sys.stderr if args.verbose else None))
    except PeerError as exc:
        raise UsageError(str(exc)) from None
    with stack:
        print(f"ready {target}", flush=True)
        stop.wait()
    return 0


def _stop_on_signals() -> threading.Event:
    """An event SIGTERM and SIGINT set: a served peer's normal stop."""
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    return stop


def _run_pulsar(info: PeerInfo, port: int, verbose: bool) -> int:
    """The Pulsar standalone: ``ready pulsar://127.0.0.1:PORT`` on stdout, and on stderr its REST API, how long it
    took to be ready and its resident memory then (the start-up cost a gate pays)."""
    from conformance.peers.pulsar import served as served_pulsar

    stop = _stop_on_signals()
    stack = contextlib.ExitStack()
    try:
        peer = stack.enter_context(served_pulsar(info, port, log=sys.stderr if verbose else None))
    except PeerError as exc:
        raise UsageError(str(exc)) from None
    with stack:
        print(f"ready {peer.target}", flush=True)
        print(f"mqtck peer run: {info.name} admin {peer.admin_url}, ready after {peer.ready_after_s:.1f} s, "
              f"RSS {peer.rss_bytes >> 20} MiB", file=sys.stderr, flush=True)
        stop.wait()
    return 0
