"""``mqtck matrix``: lay several conformance runs side by side (requirements × implementations), like wpt.fyi."""

from __future__ import annotations

import argparse
from pathlib import Path

from conformance.cliargs import UsageError
from conformance.report import matrix


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("matrix", help="results matrix of several conform runs: one HTML page plus matrix.json")
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="a run directory (holding summary.json) or a report directory (its latest run is used); "
                        "one column each, in this order. With --update, LABEL=PATH puts the run in column LABEL")
    p.add_argument("--out", required=True, type=Path, metavar="DIR",
                   help="directory to write index.html and matrix.json into (created if missing)")
    p.add_argument("--update", action="store_true",
                   help="fold the runs into the matrix already in --out instead of writing a new one: a run fills "
                        "the cells of the requirements it reports in its column (an --only run of a new ID updates "
                        "just that row), a new label adds a column, every count is recomputed")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    out: Path = args.out
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: exists and is not a directory")
    try:
        if args.update:
            labelled = [_labelled(arg) for arg in args.paths]
            model = matrix.update(matrix.load_model(out), [(label, matrix.load_run(path)) for label, path in labelled])
        else:
            model = matrix.build(matrix.collect([Path(p) for p in args.paths]))
    except (matrix.RunError, matrix.MatrixError) as exc:
        raise UsageError(str(exc)) from exc
    try:
        page = matrix.write(out, model)
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot write: {exc.strerror or exc}") from exc
    print(f"matrix: {len(model['requirements'])} requirements x {len(model['columns'])} implementations -> {page}")
    return 0


def _labelled(arg: str) -> tuple[str | None, Path]:
    """``LABEL=PATH`` or a bare path (the run's own label)."""
    label, sep, path = arg.partition("=")
    if not sep:
        return None, Path(arg)
    if not label.strip() or not path:
        raise UsageError(f"PATH {arg!r}: LABEL=PATH needs a label and a path")
    return label, Path(path)
