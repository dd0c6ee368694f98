"""``mqtck conform --client CMD --client-protocol grpc``: run the POP client check
(:mod:`conformance.client_check.pop_harness`) on a RocketMQ 5 consumer and write the reports a target run writes.

The same files and exit codes as the remoting client check (:mod:`conformance.commands.conform_client`),
restricted to the PCLIENT family. The run directory also keeps the broker's trace (``trace.jsonl``) and each client
process's output per scenario (``<scenario>.<n>.out``, its JSON lines; ``.log``, its stderr).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from conformance import expectations
from conformance.cliargs import UsageError
from conformance.client_check.pop_harness import PopOptions, run_pop_client_check
from conformance.client_check.pop_scenarios import SCENARIOS
from conformance.commands.conform_client import check_client_command, publish_client_run

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
    return publish_client_run(results, expected, FAMILY_PREFIX, command, implementation, chosen, started, run_dir,
                              reports, junit, as_json, protocol="grpc")
