"""``mqtck matrix``: lay several conformance runs side by side (requirements × implementations), like wpt.fyi."""

from __future__ import annotations

import argparse
from pathlib import Path

from conformance.cliargs import UsageError
from conformance.report import matrix


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("matrix", help="results matrix of several conform runs: one HTML page plus matrix.json")
    p.add_argument("paths", nargs="+", metavar="PATH", type=Path,
                   help="a run directory (holding summary.json) or a report directory (its latest run is used); "
                        "one column each, in this order")
    p.add_argument("--out", required=True, type=Path, metavar="DIR",
                   help="directory to write index.html and matrix.json into (created if missing)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    out: Path = args.out
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: exists and is not a directory")
    try:
        runs = matrix.collect(args.paths)
    except matrix.RunError as exc:
        raise UsageError(str(exc)) from exc
    model = matrix.build(runs)
    try:
        page = matrix.write(out, model)
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot write: {exc.strerror or exc}") from exc
    print(f"matrix: {len(model['requirements'])} requirements x {len(model['columns'])} implementations -> {page}")
    return 0
