"""``mqtck spec``: render the spec for reading and check that every requirement is tested."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from conformance import spec
from conformance.cliargs import UsageError

#: Folders whose tests may carry ``req`` markers (relative to the project root).
TEST_ROOTS = ("tests", "properties", "conformance/suite")


def project_root() -> Path:
    return Path(__file__).resolve().parents[2]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("spec", help="render SPEC.md from requirements.toml; check test coverage of IDs")
    p.add_argument("action", choices=("render", "check"), help="render: write SPEC.md; check: coverage")
    p.set_defaults(func=run)


def coverage_problems(root: Path) -> list[str]:
    """What makes a verdict unsound before any test runs.

    Every requirement needs a test, and every clause of one that lists clauses a test marked with that clause
    (a bare ID there would claim clauses it may not judge); every marker names an existing ID and clause; every
    MUST cites a seed, since a MUST is what a seed says the real system does (a reference-only requirement is the
    reference's own recording contract and judges no real system, so it cites the trace schema instead).
    """
    _, reqs = spec.load()
    found = spec.scan_test_markers(root / r for r in TEST_ROOTS)
    marked: dict[str, set[str]] = {}
    problems = []
    for marker, tests in sorted(found.items()):
        rid, clause = spec.split_marker(marker)
        req = reqs.get(rid)
        if req is None:
            problems.append(f"{marker}: marked on {sorted(tests)[0]} but not in requirements.toml")
        elif clause and clause not in dict(req.clauses):
            problems.append(f"{marker}: marked on {sorted(tests)[0]} but {rid} has no clause {clause!r}")
        elif not clause and req.clauses:
            problems.append(f"{rid}: marked bare on {sorted(tests)[0]}; it lists clauses, so mark the one judged")
        marked.setdefault(rid, set()).add(clause)
    for rid, req in reqs.items():
        if rid not in marked:
            problems.append(f"{rid}: no test is marked with it")
        for key, _ in req.clauses:
            if key not in marked.get(rid, set()):
                problems.append(f"{rid}.{key}: no test is marked with this clause")
        if req.level == "MUST" and not req.scope and not spec.SEED_CITATION.search(req.source):
            problems.append(f"{rid}: a MUST must cite a seed (seed 00N §…) for what the real system does; "
                            f"source is {req.source!r}")
    return problems


def run(args: argparse.Namespace) -> int:
    try:
        families, reqs = spec.load()
    except (ValueError, OSError) as exc:  # tomllib's errors are ValueErrors too
        raise UsageError(f"{spec.REQUIREMENTS_FILE}: {exc}") from None
    if args.action == "render":
        spec.SPEC_MD.write_text(spec.render_markdown(families, reqs), encoding="utf-8")
        print(f"wrote {spec.SPEC_MD} ({len(reqs)} requirements)")
        return 0
    problems = coverage_problems(project_root())
    for line in problems:
        print(line, file=sys.stderr)
    print(f"{len(reqs)} requirements, {len(problems)} problems")
    return 1 if problems else 0
