"""The audit job: read a trace, derive every finding, write summary.json, findings/ and report.html.

It runs inside ``mqtck audit`` (local Spark by default) and, unchanged, under ``spark-submit`` on a
cluster, where this module is the application (see docs/audit.md)::

    spark-submit --master spark://host:7077 --py-files mqtck.zip \\
        "$(python -c 'import conformance.audit.job as j; print(j.__file__)')" TRACE --report-dir DIR

Exit codes (the CLI contract): 0 no MUST requirement violated, 1 some finding violates one, 130 interrupted, 2 the input
cannot be read (one line on stderr).
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from conformance.audit import options, remote
from conformance.audit.batch import collect_together
from conformance.audit.categories import not_judged
from conformance.audit.derive import derive
from conformance.audit.frames import RUN, Catalog, TraceFrames, build_catalog
from conformance.audit.inputs import AuditFailed, UnreadableTrace, check_trace, one_line
from conformance.audit.lineage import release
from conformance.audit.load import LoadedTrace, load_trace
from conformance.audit.metrics import PREFIX as METRIC_PREFIX
from conformance.audit.metrics import metric_queries, metric_rows, read_metrics
from conformance.audit.params import AuditParams
from conformance.audit.progress import SparkProgress
from conformance.audit.report import build_summary, findings_queries, overlap_queues, write_outputs
from conformance.audit.session import SparkSettings, SparkUnavailable, spark_session
from conformance.interrupts import as_interrupt

FINDINGS_DIR = "findings"
#: Findings and metric rows as computed, before they are separated (removed at the end).
DERIVED_DIR = "_derived"
#: Input bytes per shuffle partition: the queue pass expands the input several-fold (messages per
#: consumer, wide scan rows), and a partition must sort in memory without spilling.
BYTES_PER_PARTITION = 4 * 1024 * 1024
#: Enough that a partition of the queue pass still sorts in the execution memory of a 1280m driver at
#: 100M events (with 256, a chained window sort ran out of it).
MAX_PARTITIONS = 1024
#: Partitions of the shuffles of small data (at least the cores Spark has).
SMALL_SHUFFLE_PARTITIONS = 4
#: Tasks of the final write (a few per core: the parts differ in size).
WRITE_TASKS = 8


@dataclass
class AuditResult:
    exit_code: int
    summary: dict[str, Any]
    report_dir: Path
    #: Wall time per phase, seconds.
    timings: dict[str, float] = field(default_factory=dict)


def input_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


@as_interrupt()
def run_audit(
    trace: str | Path,
    report_dir: str | Path,
    params: AuditParams | None = None,
    settings: SparkSettings | None = None,
    show_progress: bool = False,
) -> AuditResult:
    """Audit ``trace`` into ``report_dir``. Raises UnreadableTrace / SparkUnavailable (exit 2)."""
    params = params or AuditParams()
    # Absolute: a warm server (--remote) reads and writes them from its own working directory.
    report_dir, trace = Path(report_dir).resolve(), Path(trace).resolve()
    report_dir.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        timings[name] = round(now - clock, 3)
        clock = now

    check_trace(Path(trace))  # a missing or foreign input fails before a JVM starts
    size = input_bytes(Path(trace))
    settings = replace(settings or SparkSettings(), input_bytes=size)
    spark = spark_session(settings)
    lap("session")
    # The few shuffles of trace-sized data (the queue pass, the consumption table, POP) are sized from the
    # input; every other shuffle moves a few thousand rows (catalog, lanes, ownership, candidates, the
    # findings), and a task per partition costs milliseconds of scheduling whatever it holds.
    wide = min(MAX_PARTITIONS, max(1, math.ceil(size / BYTES_PER_PARTITION)))
    spark.conf.set("spark.sql.shuffle.partitions",
                   str(min(wide, max(SMALL_SHUFFLE_PARTITIONS,
                                     remote.default_parallelism(spark, SMALL_SHUFFLE_PARTITIONS)))))
    # Small traces (tests, hand-written fixtures, CI runs): compiling code for the many short stages costs
    # more than it saves, whole stages and single expressions alike (Spark then interprets them; the
    # factory mode is Spark's own switch between generated and interpreted expressions). Measured on a
    # 20K-event trace: derive 14.6 s -> 11.9 s, the same findings.
    small = settings.short_lived
    spark.conf.set("spark.sql.codegen.wholeStage", "false" if small else "true")
    spark.conf.set("spark.sql.codegen.factoryMode", "NO_CODEGEN" if small else "FALLBACK")
    with SparkProgress(spark, show_progress) as progress:
        progress.phase("reading the trace")
        loaded = load_trace(spark, trace, report_dir)
        try:
            try:
                progress.phase("cataloguing runs, clients and subscriptions")
                catalog = build_catalog(loaded.rows)
                if catalog.total_rows == 0:
                    raise UnreadableTrace(f"{trace}: the trace has no rows")
            except UnreadableTrace:
                raise
            except Exception as exc:  # corrupt files surface when first read
                raise UnreadableTrace(f"{trace}: {one_line(exc)}") from exc
            lap("load")
            try:
                summary = _derive_and_summarise(spark, trace, report_dir, params, loaded, catalog, wide, progress, lap)
            except (UnreadableTrace, AuditFailed):
                raise
            except Exception as exc:  # the JVM's failures (disk full, out of memory, ...): one line, exit 2
                raise AuditFailed(f"the Spark job failed: {one_line(exc)}") from exc
        except BaseException:
            release(spark, failed=True)
            raise
        else:
            release(spark)
        finally:
            spark.catalog.clearCache()
            shutil.rmtree(report_dir / DERIVED_DIR, ignore_errors=True)
            loaded.cleanup()
    return AuditResult(summary["exit_code"], summary, report_dir, timings)


def _derive_and_summarise(spark: SparkSession, trace: str | Path, report_dir: Path, params: AuditParams,
                          loaded: LoadedTrace, catalog: Catalog, wide_partitions: int, progress: SparkProgress,
                          lap: Callable[[str], None]) -> dict[str, Any]:
    """Every finding in one Spark action, then the summary, findings/ and report.html."""
    # Building the plan is seconds of driver work (and runs the broadcasts that the shared intermediates'
    # plans need): a phase of its own, timed apart from running it (docs/audit.md, Performance).
    progress.phase("planning the derivations")
    frames = TraceFrames(spark, loaded.rows, params, catalog, wide_partitions)
    derivation = derive(frames)
    # One action computes findings and plot metrics together (they share the shuffles); they are
    # separated when read back.
    everything = derivation.findings.unionByName(metric_rows(derivation.queue, derivation.intervals))
    lap("plan")
    progress.phase("deriving findings")
    derived_dir = report_dir / DERIVED_DIR
    # The union's last stage has one task per partition of every part (about 300 at 10M events), and each
    # task deserialises the whole plan (9 s of that stage's 28 s at 10M): a few tasks, each running
    # several parents' partitions in turn, keep both cores busy without it.
    everything.coalesce(WRITE_TASKS).write.mode("overwrite").parquet(str(derived_dir))
    lap("derive")
    progress.phase("summarising findings")
    derived = spark.read.parquet(str(derived_dir))
    findings = derived.filter(~F.col("category").startswith(METRIC_PREFIX))
    unjudged = not_judged({run: f.events for run, f in catalog.runs.items()})
    if unjudged:  # what a run's events cannot support is withheld, not reported
        withheld = [f"{run}\t{category}" for run, category in unjudged]
        findings = findings.filter(~F.concat_ws("\t", RUN, "category").isin(*withheld))
    findings.repartition(1).write.mode("overwrite").parquet(str(report_dir / FINDINGS_DIR))
    collected = collect_together({**findings_queries(findings, params.max_witnesses), **metric_queries(derived)})
    counts, examples = collected["count"], collected["example"]
    metrics = read_metrics(frames, derived, collected, overlap_queues(collected["overlap"]))
    lap("summary")
    runs = {run: {"rows": f.rows, "first_ts": f.first_ts, "horizon": f.horizon, "events": sorted(f.events)}
            for run, f in sorted(catalog.runs.items())}
    summary = build_summary(str(trace), loaded.format, params, runs, counts, examples, loaded.notes, metrics,
                            unjudged)
    write_outputs(report_dir, summary, metrics)
    lap("report")
    return summary


def main(argv: list[str] | None = None, show_progress: bool = True) -> int:
    """Entry point for ``spark-submit`` and ``python -m conformance.audit.job``."""
    parser = argparse.ArgumentParser(prog="mqtck-audit", description="Audit a trace (schema v1) on Spark.")
    options.add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        params = options.params_from(args)
        settings = options.spark_settings(args)
        result = run_audit(args.trace, args.report_dir, params, settings, show_progress=show_progress)
    except (ValueError, UnreadableTrace, AuditFailed, SparkUnavailable) as exc:
        print(f"mqtck audit: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("mqtck audit: interrupted", file=sys.stderr)
        return 130
    print_summary(result)
    return result.exit_code


def print_summary(result: AuditResult) -> None:
    """One line per category with findings, one per category some run could not be judged for, then where
    the reports are."""
    for name, count in result.summary["totals"].items():
        if count:
            print(f"{name:28s} {count}")
    by_reason: dict[str, list[str]] = {}
    for name, runs in result.summary["not_judged"].items():
        for reason in dict.fromkeys(runs.values()):
            by_reason.setdefault(reason, []).append(name if len(runs) == len(result.summary["runs"])
                                                     else f"{name} (in {len(runs)} of the runs)")
    for reason, names in by_reason.items():
        print(f"not judged, {reason}: {', '.join(names)}")
    verdict = "no MUST violated" if result.exit_code == 0 else f"{result.summary['must_violations']} MUST violations"
    print(f"{verdict}; report: {result.report_dir / 'report.html'}")


if __name__ == "__main__":  # pragma: no cover - exercised through spark-submit / python -m
    sys.exit(main())
