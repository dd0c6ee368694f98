"""``mqtck conform --client CMD --client-protocol grpc``: run the POP client check
(:mod:`conformance.client_check.pop_harness`) on a RocketMQ 5 consumer and write the reports a target run writes.

The same files and exit codes as the remoting client check (:mod:`conformance.commands.conform_client`),
restricted to the PCLIENT family. The run directory also keeps the broker's trace (``trace.jsonl``) and each client
process's output per scenario (``<scenario>.<n>.out``, its JSON lines; ``.log``, its stderr).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from conformance import expectations, report
from conformance.cliargs import UsageError
from conformance.client_check.pop_harness import PopOptions, run_pop_client_check
from conformance.client_check.pop_scenarios import SCENARIOS
from conformance.commands.conform_client import check_client_command

#: The requirement family this check judges.
FAMILY_PREFIX = "PCLIENT-"


def run(command: str, scenarios: Sequence[str] | None = None, *, expect: str | None = None,
        report_dir: str = "reports", implementation: str | None = None, junit: str | None = None,
        as_json: bool = False) -> int:
    """Check the v5 client program ``command`` in ``scenarios`` (all when None) and write the reports."""
    check_client_command(command)
    chosen = tuple(scenarios or SCENARIOS)
    unknown = [s for s in chosen if s not in SCENARIOS]
    if unknown:
        raise UsageError(f"--client-scenarios: unknown scenario(s) {', '.join(unknown)} for --client-protocol grpc; "
                         f"known: {', '.join(SCENARIOS)}")
    expected = expectations.load_option(expect)
    reports = Path(report_dir)
    label = implementation or command
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", label)[:60].strip("-")
    run_dir = reports / f"{time.strftime('%Y%m%d-%H%M%S')}-pop-client-{slug}"
    console = Console(stderr=True)
    started = time.monotonic()
    results = run_pop_client_check(
        PopOptions(command, chosen), run_dir,
        None if as_json else lambda name: console.print(f"POP client check: scenario {name}"),
    )
    vs = [v for v in report.verdicts(results, expected) if v.id.startswith(FAMILY_PREFIX)]
    extra = {"duration_s": round(time.monotonic() - started, 3), "run": run_dir.name, "scenarios": list(chosen),
             "implementation": implementation or f"client: {command}", "protocol": "grpc"}
    if expected is not None:
        extra["expectations"] = expected.name
    doc = report.summary(f"client: {command}", [], vs, results, extra)
    report.publish(reports, run_dir, doc, vs, Path(junit) if junit else None)
    if as_json:
        print(json.dumps(doc, indent=2))
    else:
        out = Console()
        for v in vs:
            colour = {"pass": "green", "fail": "red"}.get(v.status, "yellow")
            out.print(f"[{colour}]{v.status.upper():>15}[/{colour}] {v.id} ({v.level}): {v.sentence}")
            if v.expectation is not None:
                out.print(f"{'':16}expected: {v.expectation['reason']}", markup=False, highlight=False)
            for t in v.tests:
                out.print(f"{'':16}{t['nodeid']}: {t['summary']}", markup=False, highlight=False)
        out.print(f"verdict: [bold]{doc['verdict'].upper()}[/bold] in {doc['duration_s']} s — reports in {run_dir}")
    return report.exit_code(vs)
