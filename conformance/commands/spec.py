"""``mqtck spec``: render the spec for reading and check that every requirement is tested."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from conformance import spec

#: Folders whose tests may carry ``req`` markers (relative to the project root).
TEST_ROOTS = ("tests", "properties", "conformance/suite")


def project_root() -> Path:
    return Path(__file__).resolve().parents[2]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("spec", help="render SPEC.md from requirements.toml; check test coverage of IDs")
    p.add_argument("action", choices=("render", "check"), help="render: write SPEC.md; check: coverage")
    p.set_defaults(func=run)


def coverage_problems(root: Path) -> list[str]:
    """Every MUST/SHOULD needs a test; every test marker must name an existing ID."""
    _, reqs = spec.load()
    found = spec.scan_test_markers(root / r for r in TEST_ROOTS)
    problems = [f"{rid}: no test is marked with it" for rid in reqs if rid not in found]
    problems += [
        f"{rid}: marked on {sorted(tests)[0]} but not in requirements.toml"
        for rid, tests in sorted(found.items())
        if rid not in reqs
    ]
    return problems


def run(args: argparse.Namespace) -> int:
    families, reqs = spec.load()
    if args.action == "render":
        spec.SPEC_MD.write_text(spec.render_markdown(families, reqs), encoding="utf-8")
        print(f"wrote {spec.SPEC_MD} ({len(reqs)} requirements)")
        return 0
    problems = coverage_problems(project_root())
    for line in problems:
        print(line, file=sys.stderr)
    print(f"{len(reqs)} requirements, {len(problems)} problems")
    return 1 if problems else 0
