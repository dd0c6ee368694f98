"""``mqtck audit TRACE --report-dir D``: audit a recorded trace (schema v1) on Spark.

Local Spark (``local[*]``, driver memory bounded) unless ``--master`` names a cluster; the same job runs
under ``spark-submit`` (docs/audit.md). Writes ``summary.json``, ``findings/`` (Parquet) and
``report.html`` to the report directory. Exit 0 when no MUST requirement is violated, 1 when one is,
2 when the input cannot be read or Spark cannot start (one line on stderr).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from conformance.audit import options
from conformance.audit.inputs import AuditFailed, UnreadableTrace, check_trace
from conformance.cliargs import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("audit", help="audit a trace (Parquet or JSON Lines) on Spark; write summary, findings, report")
    options.add_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        params = options.params_from(args)
        check_trace(Path(args.trace))
    except (ValueError, UnreadableTrace) as exc:
        raise UsageError(str(exc)) from exc
    # Spark is imported only now: the other commands (and a refused input) never start a JVM.
    from conformance.audit.job import print_summary, run_audit
    from conformance.audit.session import SparkUnavailable

    settings = options.spark_settings(args)
    try:
        result = run_audit(args.trace, args.report_dir, params, settings, show_progress=True)
    except (UnreadableTrace, AuditFailed, SparkUnavailable) as exc:  # a Ctrl-C is KeyboardInterrupt (run_audit)
        raise UsageError(str(exc)) from exc
    print_summary(result)
    return result.exit_code
