"""``mqtck conform --client CMD``: run the client check (:mod:`conformance.client_check`) and write the reports a
target run writes.

Same files (``<report-dir>/<run>/{summary.json,junit.xml,report.html}``, ``latest`` link) and exit codes
(0 when every applicable MUST passed, 1 otherwise, 2 for a usage error), restricted to the CCLIENT family:
the other requirements are about brokers and are not judged here. The run directory also keeps the broker's
trace (``trace.jsonl``, for ``mqtck audit``) and the client's output per scenario.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import shlex
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from conformance import expectations, report
from conformance.cliargs import UsageError
from conformance.client_check.harness import Options, run_client_check
from conformance.client_check.pop_scenarios import SCENARIOS as POP_SCENARIOS
from conformance.client_check.scenarios import SCENARIOS

#: The requirement family this check judges.
FAMILY_PREFIX = "CCLIENT-"
#: First words of a --client command that are the shell's own (not programs on PATH).
SHELL_WORDS = frozenset({"exec", "cd", "set", "export", "if", "for", "while", "(", "{", ".", "source", "command"})


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--client", default=None, metavar="CMD",
                   help="check a client program instead of a target: CMD (a shell command) is run against the "
                        "reference remoting broker in each scenario (docs/client-conformance.md)")
    p.add_argument("--client-protocol", choices=("remoting", "grpc"), default="remoting",
                   help="--client: the protocol the client speaks: remoting (RocketMQ 4.x, the default) or grpc "
                        "(RocketMQ 5, POP consumers: the PCLIENT check against the reference's gRPC front)")
    p.add_argument("--client-scenarios", nargs="+", default=None, metavar="NAME",
                   help=f"--client: run only these scenarios ({', '.join(SCENARIOS)}; with --client-protocol grpc: "
                        f"{', '.join(POP_SCENARIOS)})")
    p.add_argument("--client-duration-s", type=float, default=None,
                   help="--client: run the client this long in every scenario (default: each scenario's own)")
    p.add_argument("--rebalance-grace-s", type=float, default=None,
                   help="--client: pulls of a revoked queue are allowed this long after the rebalance "
                        "(default: the seeds' rebalance interval, 20 s, + 2 s)")


def check_client_command(cmd: str) -> None:
    """The program CMD starts must exist: a missing one would otherwise be judged as a client that fails every
    CCLIENT requirement. Leading ``NAME=value`` assignments are skipped; shell keywords and builtins pass."""
    try:
        words = shlex.split(cmd)
    except ValueError as exc:
        raise UsageError(f"--client: {cmd!r} is not a shell command: {exc}") from None
    words = list(itertools.dropwhile(lambda w: re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", w), words))
    if not words:
        raise UsageError("--client: no command given")
    program = words[0]
    if program in SHELL_WORDS or shutil.which(program) is not None:
        return
    where = "is not an executable file" if "/" in program else "is not on PATH"
    raise UsageError(f"--client: command {program!r} {where}")


def run(command: str, scenarios: Sequence[str] | None = None, duration_s: float | None = None,
        rebalance_grace_s: float | None = None, *, expect: str | None = None, report_dir: str = "reports",
        implementation: str | None = None, junit: str | None = None, as_json: bool = False) -> int:
    """Check the client program ``command`` (``--client``) in ``scenarios`` (all when None) and write the reports;
    the other arguments are ``mqtck conform``'s options of the same names, which this run shares."""
    check_client_command(command)
    chosen = tuple(scenarios or SCENARIOS)
    unknown = [s for s in chosen if s not in SCENARIOS]
    if unknown:
        raise UsageError(f"--client-scenarios: unknown scenario(s) {', '.join(unknown)}; known: {', '.join(SCENARIOS)}")
    if duration_s is not None and duration_s <= 0:
        raise UsageError("--client-duration-s must be > 0")
    expected = expectations.load_option(expect)
    options = Options(command, chosen, duration_s)
    if rebalance_grace_s is not None:
        options.rebalance_grace_s = rebalance_grace_s
    reports = Path(report_dir)
    label = implementation or command
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", label)[:60].strip("-")
    run_dir = reports / f"{time.strftime('%Y%m%d-%H%M%S')}-client-{slug}"
    console = Console(stderr=True)
    started = time.monotonic()
    results = run_client_check(
        options, run_dir, None if as_json else lambda name: console.print(f"client check: scenario {name}"),
    )
    return publish_client_run(results, expected, FAMILY_PREFIX, command, implementation, chosen, started, run_dir,
                              reports, junit, as_json)


def publish_client_run(results: Any, expected: Any, family_prefix: str, command: str, implementation: str | None,
                       chosen: Any, started: float, run_dir: Path, reports: Any, junit: str | None, as_json: bool,
                       **fields: Any) -> int:
    """The verdicts of a client check's family (CCLIENT, PCLIENT) written to the run's reports and printed: one
    shape for every client check. ``fields`` go into the summary (e.g. the wire protocol)."""
    vs = [v for v in report.verdicts(results, expected) if v.id.startswith(family_prefix)]
    extra = {"duration_s": round(time.monotonic() - started, 3), "run": run_dir.name, "scenarios": list(chosen),
             "implementation": implementation or f"client: {command}", **fields}
    if expected is not None:
        extra["expectations"] = expected.name
    doc = report.summary(f"client: {command}", [], vs, results, extra)
    report.publish(reports, run_dir, doc, vs, Path(junit) if junit else None)
    if as_json:
        print(json.dumps(doc, indent=2))
    else:
        out = Console()
        for v in vs:
            colour = {"pass": "green", "fail": "red", "error": "magenta"}.get(v.status, "yellow")
            out.print(f"[{colour}]{v.status.upper():>15}[/{colour}] {v.id} ({v.level}): {v.sentence}")
            if v.expectation is not None:
                out.print(f"{'':16}expected: {v.expectation['reason']}", markup=False, highlight=False)
            for t in v.tests:
                out.print(f"{'':16}{t['nodeid']}: {t['summary']}", markup=False, highlight=False)
        out.print(f"verdict: [bold]{doc['verdict'].upper()}[/bold] in {doc['duration_s']} s — reports in {run_dir}")
    return report.exit_code(vs)
