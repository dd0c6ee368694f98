"""``mqtck trace synth``: generate a large, valid trace (schema v1) with exactly the injected faults.

``--inject KIND=COUNT,...`` names finding categories (``mqtck trace synth --list-kinds``); the base
workload audits clean and each injected fault yields exactly one finding of its kind, as recorded in
``DIR/manifest.json``. Prints the manifest's entry for the run as JSON.
"""

from __future__ import annotations

import argparse
import json

from conformance.cliargs import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("trace", help="trace tools: synth (generate a synthetic trace with injected faults)")
    actions = p.add_subparsers(dest="action", metavar="ACTION", parser_class=type(p))
    actions.required = True
    s = actions.add_parser("synth", help="write a synthetic workload trace (partitioned Parquet) and manifest.json")
    s.add_argument("--events", type=int, default=None, help="about this many rows (required unless --list-kinds)")
    s.add_argument("--seed", type=int, default=0, help="seed (default 0); same seed, same trace")
    s.add_argument("--inject", default="", help="faults to inject: KIND=COUNT,... (kinds: --list-kinds)")
    s.add_argument("--out", default=None, help="output directory (run=<name>/part-*.parquet, manifest.json)")
    s.add_argument("--run", default="run-0", help="run name (default run-0); another name adds a run")
    s.add_argument("--list-kinds", action="store_true", help="print the injectable kinds and exit")
    s.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        from conformance.audit.synth import parse_inject, synthesize
        from conformance.audit.synth.faults import KINDS, InjectionError
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise UsageError(f"{exc.name} is not installed: pip install 'mqtck[spark]'") from exc
    if args.list_kinds:
        print("\n".join(sorted(KINDS)))
        return 0
    if args.events is None or args.out is None:
        raise UsageError("--events and --out are required")
    if args.events <= 0:
        raise UsageError(f"--events must be > 0, got {args.events}")
    try:
        manifest = synthesize(args.out, args.events, args.seed, parse_inject(args.inject), run=args.run)
    except InjectionError as exc:
        raise UsageError(str(exc)) from exc
    print(json.dumps({"out": args.out, "run": args.run, **manifest["runs"][args.run]}, sort_keys=True))
    return 0
