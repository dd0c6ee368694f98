"""``mqtck broker``: serve the reference broker over one transport.

* ``--stdio``: JSON Lines on stdin/stdout (Maelstrom-like; used by the crash tests);
* ``--http [HOST:]PORT``: the OpenAPI front (loopback unless a host is given; port 0 picks a free port
  and the line ``mqtck broker: serving http://HOST:PORT`` tells which);
* ``--remoting [HOST:]PORT``: the RocketMQ 4.x remoting protocol (name server on PORT, broker on
  ``--broker-port``, ephemeral by default) for the official clients; the line
  ``mqtck broker: serving remoting://HOST:PORT`` names the name server (docs/remoting.md);
* ``--pulsar [HOST:]PORT``: the Pulsar binary protocol over the permit dispatcher (docs/pulsar.md); the line
  ``mqtck broker: serving pulsar://HOST:PORT`` is the service URL clients are given;
* ``--grpc [HOST:]PORT``: the RocketMQ 5 gRPC front (``apache.rocketmq.v2.MessagingService``, docs/grpc.md), alone
  or beside ``--remoting`` or ``--http`` on the same broker core (one store, one loop), as the 5.x proxy in LOCAL
  mode serves gRPC beside the broker; its line ``mqtck broker: serving grpc://HOST:PORT`` follows the other's.

``--sim-clock`` runs the broker on simulated time that moves only through ``POST /admin/clock/advance`` (with
``--http``) or the control channel's ``POST /clock/advance`` (with ``--remoting --control``): the conformance suite
and ``mqtck diff`` then get clock control over the wire and run as deterministically as in-process.

With ``--remoting``, ``--control`` also serves the control channel (``conformance.targets.control``: restart,
retention expiry, store layout) on a free loopback port and the serving line names the target as
``remoting://HOST:PORT?control=127.0.0.1:CPORT``; ``--mutant NAME`` serves the broker built with a seeded
fault's broker components (``conformance.mutants``), so the catalogue can be run over the wire (over HTTP too: the
permit faults, whose dispatcher the RocketMQ wire does not carry).
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import ipaddress
import socket
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from conformance.cliargs import UsageError
from reference.net.grpc.limits import ReceiveLimits

if TYPE_CHECKING:
    from conformance.mutants import Mutant
    from reference.broker.config import BrokerConfig
    from reference.clock import Clock
    from reference.net.fronts import FrontStarter
    from reference.net.remoting.acl.validator import AccessValidator
    from reference.store.config import MessageStoreConfig
    from reference.trace import RingSink, Trace

LOOPBACK = "127.0.0.1"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("broker", help="serve the reference broker (--stdio, --http, --remoting or --pulsar; --grpc "
                                      "alone or beside --remoting or --http)")
    transport = p.add_mutually_exclusive_group()
    transport.add_argument("--stdio", action="store_true", help="JSON Lines requests on stdin, responses on stdout")
    transport.add_argument("--http", metavar="[HOST:]PORT", default=None, help="serve the OpenAPI front")
    transport.add_argument("--remoting", metavar="[HOST:]PORT", default=None,
                           help="serve the RocketMQ remoting protocol: name server on PORT, broker on --broker-port")
    transport.add_argument("--pulsar", metavar="[HOST:]PORT", default=None,
                           help="serve the Pulsar binary protocol (pulsar://HOST:PORT) over the permit dispatcher")
    p.add_argument("--grpc", metavar="[HOST:]PORT", default=None,
                   help="serve the RocketMQ 5 gRPC front (MessagingService), alone or beside --remoting or --http "
                        "on the same broker")
    p.add_argument("--grpc-min-invisible-ms", type=int, default=None,
                   help="--grpc: the shortest invisible time a ReceiveMessage may ask (the proxy's "
                        "minInvisibleTimeMillsForRecv, default 10000)")
    p.add_argument("--grpc-min-hold-ms", type=int, default=None,
                   help="--grpc: the shortest hold of a ReceiveMessage (the proxy's "
                        "grpcClientConsumerMinLongPollingTimeoutMillis, default 5000)")
    p.add_argument("--grpc-max-hold-ms", type=int, default=None,
                   help="--grpc: the longest hold of a ReceiveMessage (the proxy's "
                        "grpcClientConsumerMaxLongPollingTimeoutMillis, default 20000)")
    p.add_argument("--broker-port", type=int, default=0, help="--remoting: the broker's port (default: ephemeral)")
    p.add_argument("--file-reserved-hours", type=int, default=None,
                   help="hours a commit-log segment is kept (fileReservedTime; 0 lets retention delete at once)")
    p.add_argument("--data-dir", required=True, help="store directory (created if missing; recovered if not)")
    p.add_argument("--trace", default=None, help="record a trace here (*.jsonl, *.jsonl.gz or a Parquet dir)")
    p.add_argument("--segment-bytes", type=int, default=None, help="commit-log segment size")
    p.add_argument("--channel-expired-ms", type=int, default=None,
                   help="a consumer channel silent this long is removed at the next housekeeping scan "
                        "(channelExpiredTimeout, default 120000); with --grpc, an auto_renew consumer's messages "
                        "are renewed until then, and given back 1 s after")
    p.add_argument("--channel-scan-ms", type=int, default=None,
                   help="how often the housekeeping scan runs (default 10000)")
    p.add_argument("--clean-interval-ms", type=int, default=None,
                   help="how often the clean service runs (cleanResourceInterval, default 10000); gating runs use "
                        "1000 so that retention tests wait less")
    p.add_argument("--offset-overflow-to-max", action="store_true",
                   help="a read past the max offset of a queue whose min offset is 0 goes to the max offset, as "
                        "Apache RocketMQ since 4.9.4 does (default: back to 0, as the seed's broker; OFFSET-4 allows "
                        "both)")
    p.add_argument("--flush-disk-type", choices=("ASYNC", "SYNC"), default="ASYNC",
                   help="ASYNC (default): a send is acknowledged once its bytes are in the OS page cache; SYNC: once "
                        "they are also msync'ed to the device (RocketMQ's flushDiskType)")
    p.add_argument("--sim-clock", action="store_true",
                   help="simulated time, moved only by a clock advance: POST /admin/clock/advance (--http) or "
                        "the control channel's POST /clock/advance (--remoting with --control)")
    p.add_argument("--short-polling", action="store_true",
                   help="long polling off: hold a pull at most shortPollingTimeMills (1 s)")
    p.add_argument("--control", action="store_true",
                   help="--remoting: also serve the control channel (restart, retention expiry, store layout, run-time "
                        "settings, manual delete) on "
                        "loopback; the serving line ends with ?control=HOST:PORT")
    p.add_argument("--acl", metavar="FILE", default=None,
                   help="--remoting: RocketMQ ACL 1.0 (a plain_acl.yml file: accounts, their topic and group "
                        "permissions, white-listed addresses); every broker request must then be signed")
    p.add_argument("--api-key-file", metavar="FILE", default=None,
                   help="--http: serve only requests whose X-API-Key header holds a key of this file (one per line)")
    p.add_argument("--mutant", metavar="NAME", default=None,
                   help="--remoting, --http, --pulsar or --grpc: serve the broker with this seeded broker fault of the "
                        "catalogue")
    p.add_argument("--log-level", choices=LOG_LEVELS, default="warning",
                   help="the server log on stderr: info adds one line per connection and per unsupported or refused "
                        "request (its code and reason); warning (the default) only errors and ACL refusals")
    p.set_defaults(func=run)


#: ``--log-level`` choices, quietest last; the default keeps the hot path silent.
LOG_LEVELS = ("debug", "info", "warning", "error")


def configure_log(level: str) -> None:
    """One line per event on stderr, under the ``mqtck`` loggers the servers write to."""
    import logging
    import sys

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("mqtck broker: %(levelname)s %(message)s"))
    root = logging.getLogger("mqtck")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False


def broker_mutant(name: str) -> Mutant:
    """The catalogue's broker fault ``name``; UsageError for an unknown name or a fault outside the broker."""
    from conformance.mutants import CATALOGUE

    known = ", ".join(sorted(n for n, m in CATALOGUE.items() if m.is_broker_fault))
    mutant = CATALOGUE.get(name)
    if mutant is None:
        raise UsageError(f"--mutant: unknown seeded fault {name!r}; broker faults: {known}")
    if not mutant.is_broker_fault:
        part = "client" if mutant.client is not None else "allocation strategies"
        raise UsageError(f"--mutant: {name} is a fault of the {part}, not of the broker; broker faults: {known}")
    return mutant


def parse_http_address(text: str, option: str = "--http") -> tuple[str, int]:
    host, sep, port_text = text.rpartition(":")
    host = host if sep else LOOPBACK
    try:
        port = int(port_text)
    except ValueError:
        raise UsageError(f"{option} expects [HOST:]PORT, got {text!r}") from None
    if not 0 <= port <= 65535:
        raise UsageError(f"{option} port must be in [0, 65535], got {port}")
    return host or LOOPBACK, port


def read_acl(path: str) -> AccessValidator:
    from reference.net.remoting.acl.config import AclConfigError, load_acl
    from reference.net.remoting.acl.validator import AccessValidator

    try:
        return AccessValidator(load_acl(Path(path)))
    except AclConfigError as exc:
        raise UsageError(f"--acl {exc}") from None


def read_key_file(path: str) -> frozenset[str]:
    from reference.net.http.api_key import read_api_keys

    try:
        return read_api_keys(Path(path))
    except OSError as exc:
        raise UsageError(f"--api-key-file {path}: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(f"--api-key-file {exc}") from None


def announce_fault(mutant: Mutant) -> None:
    """Say on stderr which fault is served and what it breaks: a served mutant answers like a broker, so without
    this line nothing tells the person at the terminal (or a CI log) that its answers are wrong on purpose. Stderr,
    because stdout's one serving line is what launchers read; once every flag is checked, so that a usage error
    stays one line."""
    print(f"mqtck broker: serving seeded fault {mutant.name}, which breaks {', '.join(mutant.breaks)}: "
          f"{mutant.description}", file=sys.stderr, flush=True)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def warn_if_open(host: str, option: str, protection: str) -> None:
    """Binding beyond loopback without access control lets anyone who can reach the port read and write every
    topic: said once on stderr, not refused (a test network may want exactly that)."""
    if not is_loopback(host):
        print(f"mqtck broker: warning: {option} binds {host or '0.0.0.0'}, beyond loopback, without access control: "
              f"any client that reaches it may read and write every topic; add {protection}",
              file=sys.stderr, flush=True)


def ensure_bindable(host: str, port: int, option: str) -> None:
    """A port another process holds is a usage error named by its option (one line, exit 2), found before the
    broker opens its store rather than as a traceback from the server (remoting) or uvicorn's exit 3 (HTTP)."""
    if port == 0:
        return
    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as exc:
        reason = "address already in use" if exc.errno == errno.EADDRINUSE else exc.strerror or str(exc)
        raise UsageError(f"{option} {host}:{port}: {reason}") from None


def grpc_limits(args: argparse.Namespace) -> ReceiveLimits:
    """The gRPC front's receive limits from ``--grpc-min-invisible-ms`` / ``--grpc-min-hold-ms`` /
    ``--grpc-max-hold-ms`` (each the proxy's default when not given); a limit without ``--grpc`` or one the front
    could not honour is a usage error naming the flag."""
    given = {"min_invisible_ms": args.grpc_min_invisible_ms, "min_hold_ms": args.grpc_min_hold_ms,
             "max_hold_ms": args.grpc_max_hold_ms}
    flags = {name: "--grpc-" + name.replace("_ms", "-ms").replace("_", "-") for name in given}
    if args.grpc is None and any(v is not None for v in given.values()):
        raise UsageError(f"{next(flags[n] for n, v in given.items() if v is not None)} needs --grpc [HOST:]PORT")
    try:
        return ReceiveLimits(**{name: value for name, value in given.items() if value is not None})
    except ValueError as exc:
        name = str(exc).split(":", 1)[0].removeprefix("ReceiveLimits.")
        raise UsageError(f"{flags.get(name, name)}:{str(exc).split(':', 1)[1]}") from None


def _grpc_fronts(args: argparse.Namespace) -> list[FrontStarter]:
    """``--grpc`` beside ``--remoting`` or ``--http``: the gRPC front started on their loop and broker. Alone it is
    the server itself (no extra front). Its port is checked before the store opens, as the others'."""
    limits = grpc_limits(args)
    if args.grpc is None:
        return []
    host, port = parse_http_address(args.grpc, "--grpc")
    ensure_bindable(host, port, "--grpc")
    warn_if_open(host, "--grpc", "a loopback address (the gRPC front has no access control)")
    if args.remoting is None and args.http is None:
        return []
    from reference.net.grpc.server import grpc_starter

    return [grpc_starter(host, port, limits)]


def run(args: argparse.Namespace) -> int:
    from reference.broker.config import BrokerConfig
    from reference.broker.host import BrokerHost
    from reference.clock import RealClock, SimClock
    from reference.store.config import MessageStoreConfig
    from reference.trace import RingSink, Trace, sink_for

    if not args.stdio and args.http is None and args.remoting is None and args.pulsar is None and args.grpc is None:
        raise UsageError("choose a transport: --stdio, --http [HOST:]PORT, --remoting [HOST:]PORT, --pulsar "
                         "[HOST:]PORT or --grpc [HOST:]PORT")
    if args.grpc is not None and (args.stdio or args.pulsar is not None):
        raise UsageError("--grpc serves beside --remoting or --http, not --stdio or --pulsar")
    grpc_fronts = _grpc_fronts(args)
    if args.sim_clock and not (args.http or (args.remoting is not None and args.control)):
        raise UsageError("--sim-clock needs --http or --remoting with --control (time moves only through their "
                         "clock advance)")
    if args.control and args.remoting is None:
        raise UsageError("--control needs --remoting [HOST:]PORT")
    if (args.mutant is not None and args.remoting is None and args.http is None and args.pulsar is None
            and args.grpc is None):
        raise UsageError("--mutant needs --remoting, --http, --pulsar or --grpc [HOST:]PORT")
    if args.api_key_file is not None and args.http is None:
        raise UsageError("--api-key-file needs --http [HOST:]PORT (the remoting broker takes --acl FILE)")
    if args.acl is not None and args.remoting is None:
        raise UsageError("--acl needs --remoting [HOST:]PORT (the HTTP front takes --api-key-file FILE)")
    mutant = broker_mutant(args.mutant) if args.mutant is not None else None
    configure_log(args.log_level)
    address = parse_http_address(args.http) if args.http is not None else None
    pulsar = parse_http_address(args.pulsar, "--pulsar") if args.pulsar is not None else None
    if pulsar is not None:
        ensure_bindable(*pulsar, "--pulsar")
    api_keys = read_key_file(args.api_key_file) if args.api_key_file is not None else frozenset()
    if address is not None:
        ensure_bindable(*address, "--http")
        if not api_keys:
            warn_if_open(address[0], "--http", "--api-key-file FILE")
    data_dir = Path(args.data_dir)
    if data_dir.exists() and not data_dir.is_dir():
        raise UsageError(f"--data-dir {data_dir} is not a directory")
    store_config = MessageStoreConfig()
    if args.segment_bytes is not None:
        if args.segment_bytes < 4096:
            raise UsageError("--segment-bytes must be >= 4096")
        store_config.commit_log_segment_bytes = args.segment_bytes
    if args.file_reserved_hours is not None:
        if args.file_reserved_hours < 0:
            raise UsageError("--file-reserved-hours must be >= 0")
        store_config.file_reserved_time_hours = args.file_reserved_hours
    if args.clean_interval_ms is not None:
        if args.clean_interval_ms < 100:
            raise UsageError("--clean-interval-ms must be >= 100")
        store_config.clean_resource_interval_ms = args.clean_interval_ms
    store_config.flush_disk_type = args.flush_disk_type
    store_config.offset_overflow_to_max = args.offset_overflow_to_max
    clock = SimClock() if args.sim_clock else RealClock()
    config = BrokerConfig(long_polling_enable=not args.short_polling)
    for flag, value, field in (("--channel-expired-ms", args.channel_expired_ms, "channel_expired_timeout_ms"),
                               ("--channel-scan-ms", args.channel_scan_ms, "channel_scan_interval_ms")):
        if value is not None:
            if value < 100:
                raise UsageError(f"{flag} must be >= 100")
            setattr(config, field, value)
    sink = sink_for(args.trace) if args.trace else None
    # With a control channel the runner serves the trace too (capability trace), from a bounded ring teed to --trace.
    ring = RingSink(sink) if args.remoting is not None and args.control else None
    if ring is not None:
        sink = ring
    trace = Trace(sink, run=f"broker-{data_dir.name}", clock=clock) if sink is not None else None
    if args.remoting is not None:
        return _run_remoting(args, data_dir, clock, config, store_config, trace, mutant, ring, grpc_fronts)
    if mutant is not None:
        announce_fault(mutant)
    broker_host = BrokerHost(data_dir, clock, config=config, store_config=store_config, trace=trace,
                             components=mutant.components if mutant is not None else None)
    try:
        if address is not None:
            from reference.net.http.server import serve_http

            serve_http(broker_host, *address, api_keys=api_keys, fronts=grpc_fronts)
        elif pulsar is not None:
            from reference.net.pulsar.server import serve_pulsar

            serve_pulsar(broker_host, *pulsar)
        elif args.grpc is not None:
            from reference.net.grpc.server import serve_grpc

            serve_grpc(broker_host, *parse_http_address(args.grpc, "--grpc"), limits=grpc_limits(args))
        else:
            from reference.net.stdio import serve_stdio

            asyncio.run(serve_stdio(broker_host))
    except KeyboardInterrupt:  # a server's normal stop (exit 0), as with --remoting, `mqtck record`, `mqtck peer run`
        pass
    finally:
        if trace is not None:
            trace.end()
    return 0


def _run_remoting(
    args: argparse.Namespace, data_dir: Path, clock: Clock, config: BrokerConfig, store_config: MessageStoreConfig,
    trace: Trace | None, mutant: Mutant | None = None, ring: RingSink | None = None,
    fronts: Sequence[FrontStarter] = (),
) -> int:
    """The broker is built once its port is bound: its address is every record's STOREHOST. Each broker runs
    on its own process clock, so that a control-channel kill can stop all its timers at once."""

    from reference.broker.host import BrokerHost
    from reference.net.remoting.server import Extension, RemotingServers, serve_remoting

    host, port = parse_http_address(args.remoting, "--remoting")
    if not 0 <= args.broker_port <= 65535:
        raise UsageError(f"--broker-port must be in [0, 65535], got {args.broker_port}")
    ensure_bindable(host, port, "--remoting")
    ensure_bindable(host, args.broker_port, "--broker-port")
    acl = read_acl(args.acl) if args.acl is not None else None
    if acl is None:
        warn_if_open(host, "--remoting", "--acl FILE")
    if mutant is not None:
        announce_fault(mutant)

    broker_host = BrokerHost(data_dir, clock, config=config, store_config=store_config, trace=trace,
                             components=mutant.components if mutant is not None else None)

    def control(servers: RemotingServers) -> tuple[str, Callable[[], None]]:
        from conformance.targets.control import serve_control
        from reference.net.remoting.server import LoopControl

        implementation = "mqtck-reference" + (f" (seeded fault {mutant.name})" if mutant is not None else "")
        channel = serve_control(LoopControl(servers, asyncio.get_running_loop(), implementation, ring), LOOPBACK)
        return f"?control={channel.address}", channel.stop

    extension: Extension | None = control if args.control else None
    try:
        serve_remoting(broker_host, host, port, args.broker_port, extension=extension, acl=acl, fronts=fronts)
    except KeyboardInterrupt:  # before the server's own SIGINT handler is in place: still a normal stop
        pass
    finally:
        if trace is not None:
            trace.end()
    return 0
