"""The audit's command-line options, shared by ``mqtck audit`` and the spark-submit job
(:mod:`conformance.audit.job`). No Spark import here: the CLI parses arguments and rejects a missing
trace without starting a JVM."""

from __future__ import annotations

import argparse

from conformance.audit.engine import ENGINES, default_engine
from conformance.audit.params import AuditParams
from conformance.audit.remote import parse_connect_url
from conformance.audit.session import SparkSettings
from conformance.cliargs import report_dir

#: Driver heap for local mode (the job never collects trace-sized data).
DRIVER_MEMORY = "1280m"
_MS_OPTIONS = ("settle_ms", "overlap_window_ms", "hold_check_interval_ms", "poll_tolerance_ms", "wake_bound_ms",
               "freeze_window_ms", "drop_grace_ms")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    d = AuditParams()
    parser.add_argument("trace", help="trace: a Parquet file or directory, or JSON Lines (.jsonl, .jsonl.gz)")
    parser.add_argument("--report-dir", required=True, type=report_dir,
                   help="where summary.json, findings/ and report.html go")
    parser.add_argument("--master", default=None, help="Spark master URL (default: local[*])")
    parser.add_argument("--driver-memory", default=DRIVER_MEMORY,
                        help=f"Spark driver memory in local mode (default {DRIVER_MEMORY})")
    parser.add_argument("--engine", default=default_engine(), choices=ENGINES,
                        help="spark: Spark's own engine; comet: Spark with Apache DataFusion Comet's native operators "
                             "(needs pyspark 4.1: pip install 'mqtck[spark,comet]'); default: $MQTCK_AUDIT_ENGINE or "
                             "spark")
    parser.add_argument("--remote", default=None, type=_connect_url, metavar="sc://HOST:PORT",
                        help="audit on a warm Spark Connect server (mqtck spark serve) instead of a Spark of this "
                             "process's own; the server reads the trace and writes the findings, so give paths it "
                             "can see; its engine is the server's")
    parser.add_argument("--settle-ms", type=int, default=d.settle_ms,
                        help=f"in-flight allowance before the horizon (default {d.settle_ms})")
    parser.add_argument("--max-witnesses", type=int, default=d.max_witnesses,
                        help=f"witness events per finding and examples per category (default {d.max_witnesses})")
    parser.add_argument("--overlap-window-ms", type=int, default=d.overlap_window_ms,
                        help=f"allowed ownership overlap (default {d.overlap_window_ms})")
    parser.add_argument("--hold-check-interval-ms", type=int, default=d.hold_check_interval_ms,
                        help=f"long-poll check interval: {d.hold_check_interval_ms} with long polling (default), "
                             "the short-polling time without")
    parser.add_argument("--poll-tolerance-ms", type=int, default=d.poll_tolerance_ms,
                        help=f"slack before an answer is late (default {d.poll_tolerance_ms})")
    parser.add_argument("--wake-bound-ms", type=int, default=d.wake_bound_ms,
                        help=f"wake latency above which a finding is raised (default {d.wake_bound_ms})")
    parser.add_argument("--freeze-window-ms", type=int, default=d.freeze_window_ms,
                        help=f"permits and backlog idle this long is a freeze (default {d.freeze_window_ms})")
    parser.add_argument("--drop-grace-ms", type=int, default=d.drop_grace_ms,
                        help="this soon after a client's REVOKE, its commit is the drop's own persist and a pull only "
                             f"the broker saw may predate the drop: no finding (default {d.drop_grace_ms})")
    parser.add_argument("--strict-commit", action="store_true",
                        help="only CONSUME OK settles a message for commit safety (not a LATER retry hand-off)")


def _connect_url(text: str) -> str:
    try:
        parse_connect_url(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--remote ")) from exc
    return text


def spark_settings(args: argparse.Namespace) -> SparkSettings:
    """The Spark session the audit's options ask for (``mqtck audit`` and the spark-submit job alike)."""
    return SparkSettings(master=args.master, driver_memory=args.driver_memory, engine=args.engine, remote=args.remote)


def params_from(args: argparse.Namespace) -> AuditParams:
    """AuditParams from parsed options; ValueError names a bad option."""
    for name in (*_MS_OPTIONS, "max_witnesses"):
        if getattr(args, name) < 0:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 0, got {getattr(args, name)}")
    return AuditParams(**{name: getattr(args, name) for name in (*_MS_OPTIONS, "max_witnesses")},
                       retry_settles_commit=not args.strict_commit)
