"""``mqtck spark serve``: a warm Spark for repeated audits (a Spark Connect server with the audit driver's
settings); ``mqtck audit --remote sc://HOST:PORT`` audits on it. Runs in the foreground until Ctrl-C (exit 0);
exit 2 with one line when pyspark, its Connect server or the engine is missing, or the port is taken."""

from __future__ import annotations

import argparse

from conformance.audit.engine import ENGINES, default_engine
from conformance.audit.options import DRIVER_MEMORY
from conformance.cliargs import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("spark", help="Spark tools: serve (a warm Spark Connect server for mqtck audit --remote)")
    verbs = p.add_subparsers(dest="verb", metavar="VERB", parser_class=type(p))
    verbs.required = True
    s = verbs.add_parser("serve", help="run a warm Spark Connect server with the audit's settings until Ctrl-C")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    s.add_argument("--port", type=int, default=15002, help="port to listen on (default 15002, Spark Connect's)")
    s.add_argument("--master", default="local[*]", help="Spark master of the server's driver (default local[*])")
    s.add_argument("--driver-memory", default=DRIVER_MEMORY, help=f"driver heap (default {DRIVER_MEMORY})")
    s.add_argument("--engine", default=default_engine(), choices=ENGINES,
                   help="the server's engine: spark, or comet (pyspark 4.1); default $MQTCK_AUDIT_ENGINE or spark")
    s.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from conformance.audit.serve import ServeOptions, serve
    from conformance.audit.session import SparkUnavailable

    if not 0 < args.port < 65536:
        raise UsageError(f"--port must be 1-65535, got {args.port}")
    options = ServeOptions(host=args.host, port=args.port, master=args.master, driver_memory=args.driver_memory,
                           engine=args.engine)
    try:
        return serve(options, lambda url: print(f"mqtck spark serve: serving {url} (engine {options.engine}, master "
                                               f"{options.master}); mqtck audit TRACE --remote {url} ...; Ctrl-C "
                                               "stops it", flush=True))
    except SparkUnavailable as exc:
        raise UsageError(str(exc)) from exc
