"""``mqtck bench NAME``: run a benchmark and print its result as JSON on stdout."""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import time

from conformance.bench import BENCHES


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="benchmarks (JSON output): " + ", ".join(BENCHES))
    benches = p.add_subparsers(dest="bench", metavar="NAME", parser_class=type(p))
    benches.required = True
    for name, module_name in BENCHES.items():
        module = importlib.import_module(module_name)
        bp = benches.add_parser(name, help=module.HELP)
        bp.add_argument("--out", default=None, help="also write the JSON result to this file")
        module.add_arguments(bp)
        bp.set_defaults(func=run, bench_module=module)


def run(args: argparse.Namespace) -> int:
    started = time.time()
    result = args.bench_module.run(args)
    doc = {
        "bench": args.bench,
        "machine": {"python": platform.python_version(), "cpus": _cpus(), "platform": platform.platform()},
        "started_unix": round(started, 3),
        "result": result,
    }
    text = json.dumps(doc, indent=2, sort_keys=True)
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
    return 0


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


