"""``mqtck bench audit``: synthesize a trace of ``--events`` rows with faults injected, audit it on Spark,
and report events/s, wall time per phase, peak driver memory, and whether every injected fault (and
nothing else) was found.

Goals on a 2-core, 24 GiB machine (issue 7): 10M events audited end to end in <= 30 s, 100M in <= 5 min,
driver <= 2 GiB, time growing no worse than linearly. The audit runs in this process, so the Spark
driver (the whole job, in local mode) is started here with ``--driver-memory`` and measured: the JVM's
peak heap (JMX memory pools) and its peak resident set (``VmHWM``), next to this Python process's.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from conformance.audit.engine import ENGINES, default_engine
from conformance.audit.options import DRIVER_MEMORY
from conformance.cliargs import UsageError

HELP = "synthesize --events rows with faults, audit them on Spark: events/s, phase times, peak driver memory"
#: Faults injected by default: a few of every kind the workload has room for.
DEFAULT_INJECT = ("lost=3,expired=2,pending=2,unsafe-commit=3,pull-after-drop=3,commit-after-drop=3,"
                  "ownership-overlap=3,duplicate-rebalance=3,duplicate-crash=2,early-poll-return=3,late-poll-return=3,slow-wake=3,"
                  "bad-offset-correction=3,duplicate-retry=3,duplicate-unknown=3,early-redelivery=3,"
                  "redelivered-after-ack=3,never-revived=3,duplicate-pop-redelivery=3,permit-overrun=3,"
                  "permit-freeze=2,bad-row=3")
MIB = 1024 * 1024


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--events", type=int, default=1_000_000, help="rows to synthesize (default 1000000)")
    parser.add_argument("--seed", type=int, default=0, help="synthesis seed (default 0)")
    parser.add_argument("--inject", default=DEFAULT_INJECT, help="faults, KIND=COUNT,... (default: some of each)")
    parser.add_argument("--driver-memory", default=DRIVER_MEMORY, help=f"Spark driver memory (default {DRIVER_MEMORY})")
    parser.add_argument("--master", default=None, help="Spark master (default local[*])")
    parser.add_argument("--engine", default=default_engine(), choices=ENGINES,
                        help="spark or comet (mqtck audit --engine; default: $MQTCK_AUDIT_ENGINE or spark)")
    parser.add_argument("--engines", default=None, metavar="E1,E2",
                        help="audit the same trace once per engine, each in a process of its own (an engine is "
                             "chosen when a JVM starts), and print every engine's result with the ratios of their "
                             "times: e.g. spark,comet in an environment with pyspark 4.1 (tox -e audit-comet)")
    parser.add_argument("--trace", default=None,
                        help="audit this existing synthetic trace directory (with manifest.json) instead")
    parser.add_argument("--keep", default=None, help="write the trace and reports here and keep them")
    parser.add_argument("--baseline", default=None, choices=("duckdb",),
                        help="after the audit, run the same core checks as portable SQL on Spark SQL and on this "
                             "engine over the same Parquet, and print both times and their ratio "
                             "(conformance/bench/baseline.py; needs the bench extra)")


def _jvm_memory(spark: Any) -> dict[str, float]:
    jvm = spark.sparkContext._jvm
    heap = 0
    for pool in jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans():
        if str(pool.getType()) == "Heap memory":
            heap += pool.getPeakUsage().getUsed()
    pid = jvm.java.lang.ProcessHandle.current().pid()
    rss_kib = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            rss_kib = int(line.split()[1])
    return {"jvm_heap_peak_mib": round(heap / MIB, 1), "jvm_rss_peak_mib": round(rss_kib / 1024, 1)}


def _jvm_cpu_seconds(spark: Any) -> float:
    """CPU time (user + system) the driver JVM has used: on a machine shared with other work, wall time
    varies with the load while this does much less, so the two together say what an audit costs."""
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    return _cpu_seconds(Path(f"/proc/{pid}/stat"))


def _cpu_seconds(stat: Path) -> float:
    """User + system CPU seconds from a /proc ``stat`` file (a process's or one thread's)."""
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


#: The driver JVM's threads by what they do (thread names, as the JVM and Spark give them): the split of an
#: audit's CPU that says whether rows, planning, compilation or collection is the cost (docs/audit.md). Each
#: role is the names' prefixes (HotSpot's compiler threads are "C1 CompilerThre" and "C2 CompilerThre": the
#: kernel keeps 15 characters).
THREAD_ROLES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("tasks", ("Executor task",)), ("jit", ("C1 CompilerThre", "C2 CompilerThre")), ("gc", ("GC Thread",)),
    ("planning", ("Thread-",)))


def _jvm_cpu_by_thread(spark: Any) -> dict[int, tuple[str, float]]:
    """Per JVM thread id: (role, CPU seconds so far), from /proc (Linux); empty elsewhere."""
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    out: dict[int, tuple[str, float]] = {}
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            name = (task / "comm").read_text().strip()
            cpu = _cpu_seconds(task / "stat")
        except OSError:  # the thread ended meanwhile
            continue
        role = next((r for r, prefixes in THREAD_ROLES if name.startswith(prefixes)), "other")
        out[int(task.name)] = (role, cpu)
    return out


def _cpu_split(before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]]) -> dict[str, float]:
    split: dict[str, float] = {}
    for tid, (role, cpu) in after.items():
        split[role] = split.get(role, 0.0) + cpu - before.get(tid, (role, 0.0))[1]
    return {role: round(cpu, 1) for role, cpu in sorted(split.items(), key=lambda kv: -kv[1])}


def _spark_jobs(spark: Any) -> set[int]:
    """Ids of the Spark jobs (actions) the driver has run so far: each one is a scheduling round trip and
    a plan to build, so their number is most of an audit's fixed cost."""
    return set(spark.sparkContext.statusTracker().getJobIdsForGroup(None))


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.engines is not None:
        return _engines_in_one_run(args)
    return _one_engine(args)


def _engines_in_one_run(args: argparse.Namespace) -> dict[str, Any]:
    """Every engine of ``--engines`` on one trace (synthesized once, or ``--trace``), one after the other, each in a
    child ``mqtck bench audit --engine E`` (a session's engine is fixed when its JVM starts, so one process cannot
    measure two); then the engines side by side, with the ratio of each one's audit and five-check times to the
    first's."""
    from conformance.audit.engine import check_engine
    from conformance.audit.synth import parse_inject, synthesize

    try:
        engines = [check_engine(name.strip()) for name in args.engines.split(",")]
    except ValueError as exc:
        raise UsageError(str(exc).replace("--engine ", "--engines: each ", 1)) from None
    if len(set(engines)) != len(engines) or len(engines) < 2:
        raise UsageError(f"--engines must name two or more different engines, got {args.engines!r}")
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="mqtck-bench-engines-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        trace = Path(args.trace) if args.trace else root / "trace"
        if not args.trace:
            shutil.rmtree(trace, ignore_errors=True)
            synthesize(trace, args.events, args.seed, parse_inject(args.inject))
        results = {name: _child(args, name, trace, root) for name in engines}
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    first = engines[0]
    ratios = {f"{name}_over_{first}": round(results[name]["audit_seconds"] / max(results[first]["audit_seconds"],
                                                                                1e-3), 2) for name in engines[1:]}
    out: dict[str, Any] = {"engines": results, "audit_ratio": ratios,
                           "found_exactly": all(r["found_exactly"] for r in results.values()),
                           "same_findings": all(r["findings"] == results[first]["findings"] for r in results.values())}
    if args.baseline is not None:
        out["five_checks_over_" + args.baseline] = {name: r["baseline"]["ratio"] for name, r in results.items()}
    return out


def _child(args: argparse.Namespace, engine: str, trace: Path, root: Path) -> dict[str, Any]:
    """One engine's ``mqtck bench audit --trace`` in a process of its own; a refusal (exit 2) is this run's."""
    out = root / f"bench-{engine}.json"
    command = [sys.executable, "-m", "conformance.cli", "bench", "audit", "--trace", str(trace), "--engine", engine,
               "--driver-memory", args.driver_memory, "--out", str(out)]
    for option, value in (("--master", args.master), ("--baseline", args.baseline)):
        if value is not None:
            command += [option, value]
    print(f"mqtck bench audit: engine {engine}", file=sys.stderr, flush=True)
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode == 2:
        said = done.stderr.strip().splitlines()
        raise UsageError(f"--engines: {engine}: {said[-1] if said else 'refused'}")
    if done.returncode != 0:
        raise RuntimeError(f"--engines: the {engine} run exited {done.returncode}:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(out.read_text())["result"]
    return result


def _one_engine(args: argparse.Namespace) -> dict[str, Any]:
    from conformance.audit.job import input_bytes, run_audit
    from conformance.audit.session import SparkSettings, spark_session
    from conformance.audit.synth import parse_inject, synthesize

    if args.baseline is not None and importlib.util.find_spec(args.baseline) is None:
        raise UsageError(f"--baseline {args.baseline}: the {args.baseline} package is not installed "
                         "(pip install 'mqtck[bench]')")
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="mqtck-bench-audit-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        started = time.perf_counter()
        if args.trace:
            trace = Path(args.trace)
            manifest = json.loads((trace / "manifest.json").read_text())
            synth_s = None
        else:
            trace = root / "trace"
            shutil.rmtree(trace, ignore_errors=True)
            manifest = synthesize(trace, args.events, args.seed, parse_inject(args.inject))
            synth_s = round(time.perf_counter() - started, 3)
        events = manifest["events"]
        spark = spark_session(SparkSettings(master=args.master, driver_memory=args.driver_memory,
                                            input_bytes=input_bytes(trace), engine=args.engine))
        cpu_started, load_before = _jvm_cpu_seconds(spark), os.getloadavg()[0]
        threads_before = _jvm_cpu_by_thread(spark)
        jobs_before = _spark_jobs(spark)
        audit_started = time.perf_counter()
        result = run_audit(trace, root / "report", settings=None)
        audit_s = time.perf_counter() - audit_started
        cpu_s = _jvm_cpu_seconds(spark) - cpu_started
        cpu_split = _cpu_split(threads_before, _jvm_cpu_by_thread(spark))
        jobs = len(_spark_jobs(spark) - jobs_before)
        memory = _jvm_memory(spark)
        found = {run: {n: c["count"] for n, c in data["categories"].items() if c["count"]}
                 for run, data in result.summary["runs"].items()}
        expected = {run: {k: v for k, v in data["expected"].items() if v} for run, data in manifest["runs"].items()}
        baseline = None
        if args.baseline is not None:
            from conformance.bench.baseline import compare

            baseline = compare(spark, trace, args.baseline)
            # The whole audit (every derivation, the report) against the baseline engine's time for the core checks.
            baseline["audit_over_" + args.baseline] = round(audit_s / max(baseline[f"{args.baseline}_s"], 1e-3), 1)
        return {
            "parameters": {"events_requested": args.events, "seed": args.seed, "inject": args.inject,
                           "driver_memory": args.driver_memory, "engine": args.engine,
                           "master": args.master or "local[*]",
                           "trace": str(trace) if args.keep or args.trace else None},
            "events": events,
            "trace_mib": round(sum(p.stat().st_size for p in trace.rglob("*.parquet")) / MIB, 1),
            "synth_seconds": synth_s,
            "synth_events_per_s": round(events / synth_s) if synth_s else None,
            "audit_seconds": round(audit_s, 3),
            "audit_events_per_s": round(events / audit_s),
            "audit_phases_s": result.timings,
            "audit_jvm_cpu_seconds": round(cpu_s, 1),
            # The same CPU by what the threads do: tasks (the rows), planning (the py4j threads building the
            # plan), jit, gc, other.
            "audit_jvm_cpu_by_role_s": cpu_split,
            "audit_spark_jobs": jobs,
            # Load average (1 min) when the audit started and ended: other work on the machine.
            "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],
            "memory": {**memory,
                       "python_rss_peak_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)},
            "found_exactly": found == expected,
            "findings": found,
            **({"baseline": baseline} if baseline is not None else {}),
        }
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
