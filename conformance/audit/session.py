"""The SparkSession the auditor runs in, with settings fit for a small machine by default.

Local mode (``local[*]``) is the default: the whole job runs in the driver JVM, so the driver's
memory bounds everything; shuffles use few partitions (the job sizes those of trace-sized data from
the input and keeps the rest small) and the UI, console progress bars and INFO logs are off, because
the CLI shows its own progress. A
``--master`` URL (or ``spark-submit``) runs the same job on a cluster; then these settings are only
defaults that the submitter's configuration overrides. ``MQTCK_SPARK_UI=true`` turns the Spark UI on (to
see where a long audit spends its time); ``MQTCK_SPARK_MASTER`` sets the master;
``MQTCK_SPARK_JAVA_OPTS`` adds flags to the driver JVM's (:data:`JVM_OPTIONS`), to measure others. The driver
maps a class-data archive of Spark's classes when one was written (:mod:`conformance.audit.class_archive`).
"""

from __future__ import annotations

import os
import socket
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from conformance import interrupts
from conformance.audit import class_archive, remote
from conformance.audit.engine import EngineUnavailable, default_engine, engine_conf

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: Default master: every core of this machine, in the driver process.
LOCAL_MASTER = "local[*]"
#: Driver heap. The auditor never collects trace-sized data, so this bounds the job's memory in local
#: mode (Spark spills to local disk beyond it); with the JVM's own memory (code, metaspace, threads,
#: buffers: about 500 MiB) the process stays under 2 GiB (1.8 GiB measured at 10M events).
DRIVER_MEMORY = "1280m"
#: Finished SQL executions, jobs and stages, and tasks, the driver's status store keeps (progress needs only
#: the running ones).
RETAINED_EXECUTIONS = 20
RETAINED_JOBS = 100
RETAINED_TASKS = 10_000
#: Shuffle partitions until the job sizes them from the input.
SHUFFLE_PARTITIONS = 8
LOG_CONFIG = Path(__file__).resolve().parent / "log4j2.properties"
#: How long a broadcast table may take to compute (Spark's default: 300 s), seconds.
BROADCAST_TIMEOUT_S = 24 * 3600
#: JVM flags for the driver, chosen by measurement (docs/audit.md, Performance):
#: * the parallel collector: a batch job wants throughput, not short pauses, and G1's remembered sets and
#:   concurrent threads cost native memory (about 180 MiB of resident set at a 1.5 GiB heap) and CPU
#:   (about 10 % of the audit's at 1M events) on a two-core machine;
#: * compile huge methods: Spark's generated code for the wide scans of the queue pass has methods over
#:   HotSpot's 8 000-byte limit, which it would otherwise leave interpreted;
#: * 16 MiB thread stacks: serialising a task of the one-action plan (every derivation unioned) recurses
#:   through the whole lineage; a test run once failed with the serialiser hundreds of frames deep on
#:   the default 1 MiB stack (only touched stack pages are committed: address space, not memory);
#: * less C2 compilation (:data:`JIT_OPTIONS`).
JVM_OPTIONS: tuple[str, ...] = ("-XX:+UseParallelGC", "-XX:-DontCompileHugeMethods", "-Xss16m")
#: An audit is a short life for a JVM: it runs tens of thousands of distinct methods (Spark's engine,
#: Catalyst, Parquet, Janino and the code generated for each stage) a few times each. With HotSpot's
#: defaults the C2 compiler threads spent 58 s of CPU on the 10M-event audit, more than half of what the
#: tasks themselves spent (85 s), on a machine with two cores (per-thread CPU from /proc, docs/audit.md).
#: Raising the invocation counts at which C2 takes a method over from C1 (x4) and inlining less deeply
#: keeps C2 for the loops that run millions of times: C2 24 s, tasks 81 s, wall 98 s -> 79 s at 10M.
#: (C1 alone, or C2 alone, or whole-stage code generation off were each slower: 111-130 s.)
JIT_OPTIONS: tuple[str, ...] = (
    "-XX:Tier4InvocationThreshold=20000", "-XX:Tier4MinInvocationThreshold=2400",
    "-XX:Tier4CompileThreshold=60000", "-XX:Tier4BackEdgeThreshold=160000",
    "-XX:MaxInlineLevel=4", "-XX:InlineSmallCode=500",
)


#: Inputs up to this size make a short-lived audit (tests, hand-written fixtures, CI runs: about 130K events
#: of Parquet): its JVM runs every method of the engine a few times and then exits.
SMALL_INPUT_BYTES = 2 * 1024 * 1024
#: The JIT for a short-lived audit: C1 only. Most of what such an audit's JVM compiles it runs a few more times
#: at most, and C2's compilations cost more than they save (20K events, with the class archive: audit
#: 17.2 s -> 15.2 s, compiler threads' CPU 9.9 s -> 3.4 s). Not for large traces: C1 alone made the 10M audit
#: 124.5 s instead of 79 s (its hot loops need C2).
#:
#: With C1 alone HotSpot reserves a 48 MiB code cache instead of 240 MiB. A driver's first 20K-event audit leaves
#: 34 MiB in it and each further one 2-7 MiB more, so a driver that audits many small traces (a test worker's, or
#: any process auditing one trace after another) filled it at its fourth audit; HotSpot then disabled its compiler
#: for good ("CodeCache is full. Compiler has been disabled") and each later audit ran interpreted: 10.4 s instead
#: of 6.4-6.7 s (docs/audit.md). So the cache is reserved at the tiered size (address space: only the pages
#: compiled code uses are committed).
SHORT_CODE_CACHE_MIB = 240
SHORT_JIT_OPTIONS: tuple[str, ...] = ("-XX:TieredStopAtLevel=1", f"-XX:ReservedCodeCacheSize={SHORT_CODE_CACHE_MIB}m")
#: The memory page a short-lived audit's sorts and aggregations allocate at a time (Spark's
#: ``spark.buffer.pageSize``). Spark sizes it from the heap and the cores (32 MiB here), and every sort, window
#: and hash aggregation of a task takes one whole page to start with: at 20K events the driver's live heap
#: reached 600 MiB, with three full collections, for a few MiB of rows. With 1 MiB pages: 150 MiB live, no
#: full collection, the write 4.4 s -> 3.8 s. A large trace keeps Spark's size (its operators fill the pages).
SHORT_PAGE_SIZE = "1m"


class SparkUnavailable(Exception):
    """pyspark or Java is missing: an environment error (exit 2)."""


@dataclass(frozen=True)
class SparkSettings:
    master: str | None = None
    driver_memory: str = DRIVER_MEMORY
    shuffle_partitions: int = SHUFFLE_PARTITIONS
    app_name: str = "mqtck-audit"
    #: The size of the trace to audit, when known before the JVM starts: a small one gets the short-life JIT
    #: (:data:`SHORT_JIT_OPTIONS`).
    input_bytes: int | None = None
    #: ``spark`` or ``comet`` (:mod:`conformance.audit.engine`); a warm server's is its own.
    engine: str = field(default_factory=default_engine)
    #: A warm Spark Connect server to audit on (``sc://HOST:PORT``, ``mqtck spark serve``) instead of a JVM of
    #: this process's own.
    remote: str | None = None

    @property
    def short_lived(self) -> bool:
        return self.input_bytes is not None and self.input_bytes <= SMALL_INPUT_BYTES


def audit_conf(settings: SparkSettings, java_opts: str) -> dict[str, str]:
    """The Spark settings of the audit's driver, for a session started here or a warm server's
    (``mqtck spark serve``): everything but the master and the engine's."""
    local_dir = Path(tempfile.gettempdir()) / "mqtck-spark"
    local_dir.mkdir(parents=True, exist_ok=True)
    conf = {
        "spark.app.name": settings.app_name,
        "spark.driver.memory": settings.driver_memory,
        "spark.driver.extraJavaOptions": java_opts,
        "spark.ui.enabled": os.environ.get("MQTCK_SPARK_UI", "false"),
        "spark.ui.showConsoleProgress": "false",
        # What the status store keeps of finished work (Spark keeps 1,000 SQL executions with their plans by
        # default): a driver that runs many audits, as a test worker's does, must not fill its heap with the
        # plans of audits long done (a CI run once spent 30 min in full GCs at 93 % of the old generation).
        "spark.sql.ui.retainedExecutions": str(RETAINED_EXECUTIONS),
        "spark.ui.retainedJobs": str(RETAINED_JOBS),
        "spark.ui.retainedStages": str(RETAINED_JOBS),
        "spark.ui.retainedTasks": str(RETAINED_TASKS),
        "spark.sql.shuffle.partitions": str(settings.shuffle_partitions),
        # The job sizes its shuffles itself (one partition per 4 MiB of input) and broadcasts its small
        # tables explicitly; adaptive re-planning between stages only adds latency (measured on 1M events:
        # 77 Spark jobs instead of 26, 10 % more CPU).
        "spark.sql.adaptive.enabled": "false",
        # The queue pass reduces its rows with a collect_list aggregation over thousands of keys per task;
        # keep it hash-based instead of falling back to sorting (Spark's default switches at 128 keys).
        "spark.sql.objectHashAggregate.sortBased.fallbackThreshold": "1000000",
        # Some broadcast tables are computed from the trace (the keys of duplicated messages, of the queue
        # pass's candidates): at 100M events that takes longer than Spark's default 300 s limit, which is
        # meant for interactive queries, not for a batch job that has nothing else to do.
        "spark.sql.broadcastTimeout": str(BROADCAST_TIMEOUT_S),
        # PySpark 4 records the Python call site of every column function for its error messages: five
        # or six JVM round trips per function, about 40 % of the 57 000 calls (12 s) that building the
        # audit's plan took. The audit reports its own errors in one line; it needs no call sites.
        "spark.python.sql.dataFrameDebugging.enabled": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
        "spark.sql.parquet.filterPushdown": "true",
        # Input splits: Spark divides the input by the cores (so both work on every scan) up to this size.
        # Smaller splits (16 MiB) only multiplied the tasks, each deserialising its stage's large plan:
        # 8 % of the CPU at 10M events in a JFR profile; with 128 MiB the 10M audit took 10 % less CPU.
        "spark.sql.files.maxPartitionBytes": str(128 * 1024 * 1024),
        # Constraint propagation infers each plan node's predicates (for inferred filters and pruned ones)
        # by walking the plan again at every optimiser iteration: on the audit's plans of some 2,000 nodes
        # that was about a second of the driver's planning thread at 20K events, and it finds no filter the
        # derivations do not state themselves (the same findings with it off).
        "spark.sql.constraintPropagation.enabled": "false",
        "spark.local.dir": str(local_dir),
    }
    if settings.short_lived:
        conf["spark.buffer.pageSize"] = SHORT_PAGE_SIZE
    return conf


def driver_java_options(short_lived: bool, *, class_archive_too: bool = True) -> str:
    """The driver JVM's flags: the log configuration, :data:`JVM_OPTIONS` (and ``MQTCK_SPARK_JAVA_OPTS``), the
    JIT for its life, and the class archive's (a server that starts once maps none)."""
    flags = (*JVM_OPTIONS, *os.environ.get("MQTCK_SPARK_JAVA_OPTS", "").split())
    jit = SHORT_JIT_OPTIONS if short_lived else JIT_OPTIONS
    # The class archive does not depend on the JIT's flags: one archive serves both kinds of audit.
    return " ".join((f"-Dlog4j2.configurationFile={LOG_CONFIG.as_uri()}",
                     "-Dio.netty.tryReflectionSetAccessible=true", *flags, *jit,
                     *(class_archive.driver_options(flags) if class_archive_too else ())))


def spark_session(settings: SparkSettings | None = None) -> SparkSession:
    """Get the running session (tests share one per process) or start one with ``settings``."""
    settings = settings or SparkSettings()
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise SparkUnavailable("pyspark is not installed: pip install 'mqtck[spark]'") from exc
    if settings.remote:
        return _remote_session(settings.remote)
    active = SparkSession.getActiveSession()
    if active is not None:
        active.conf.set("spark.sql.shuffle.partitions", str(settings.shuffle_partitions))
        return active
    builder = SparkSession.builder
    try:
        conf = {**audit_conf(settings, driver_java_options(settings.short_lived)), **engine_conf(settings.engine)}
    except EngineUnavailable as exc:
        raise SparkUnavailable(str(exc)) from exc
    for key, value in conf.items():
        builder = builder.config(key, value)
    master = settings.master or os.environ.get("MQTCK_SPARK_MASTER")
    if master:
        builder = builder.master(master)
    elif "PYSPARK_GATEWAY_PORT" not in os.environ:
        # Not under spark-submit (which launches the JVM first and passes the gateway port): local.
        builder = builder.master(LOCAL_MASTER)
    try:
        with _quiet_jvm_start():
            session = builder.getOrCreate()
    except Exception as exc:  # pragma: no cover - depends on the installation
        raise SparkUnavailable(f"cannot start Spark ({type(exc).__name__}: {str(exc).splitlines()[0]})") from exc
    session.sparkContext.setLogLevel("ERROR")
    interrupts.install()
    return session


#: How deep a protobuf message the Connect client may copy with protobuf's pure-Python backend: the audit's plan
#: nests some hundreds of relations, and protobuf's default limit is 100.
PLAN_DEPTH_LIMIT = 5000


def _deep_plans_allowed() -> None:
    """Let the Connect client copy the audit's deep plans. Its plans are protobuf messages nested some hundreds
    deep, and protobuf refuses to parse (or merge) any nested deeper than 100 by default ("Exceeded
    upb_DecodeOptions_MaxDepth" at the audit's first checkpoint).

    With protobuf's C backend (upb, the default), its oversize setting lifts that limit for this process (it also
    lifts the 64 MiB size limit; the audit's plans are far below it). That backend builds the plans at C speed: with
    the pure-Python backend, which the first ``--remote`` used, the client spent some 20 s of one core copying the
    20K-event audit's plans (docs/audit.md). The pure-Python backend (PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python)
    still works: its own recursion limit is raised."""
    from google.protobuf.internal import api_implementation

    if api_implementation.Type() == "python":
        from google.protobuf.internal import decoder

        decoder.SetRecursionLimit(PLAN_DEPTH_LIMIT)
        return
    try:
        from google._upb import _message as upb_message

        upb_message.SetAllowOversizeProtos(True)
    except (ImportError, AttributeError) as exc:
        raise SparkUnavailable(f"--remote: this protobuf ({api_implementation.Type()} backend) cannot parse plans "
                               "nested deeper than 100; set PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python") from exc


#: How long the audit waits for a warm server's port before it says there is none, seconds.
REMOTE_CONNECT_TIMEOUT_S = 5


def _remote_session(url: str) -> SparkSession:
    """A session of the Spark Connect server at ``url`` (``sc://HOST:PORT``); SparkUnavailable, in one line, when
    the client's packages are missing or nothing listens there (Connect's client would retry for minutes)."""
    host, port = remote.parse_connect_url(url)
    _deep_plans_allowed()
    try:
        import pyspark.sql.connect.session  # noqa: F401  (its packages: grpcio, pandas, ...)
        from pyspark.sql import SparkSession
    except ImportError as exc:
        raise SparkUnavailable(f"--remote needs Spark Connect's client: pip install 'mqtck[spark,connect]' "
                               f"({type(exc).__name__}: {exc})") from exc
    try:
        socket.create_connection((host, port), timeout=REMOTE_CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise SparkUnavailable(f"--remote {url}: no Spark Connect server answers there ({exc.strerror or exc}); "
                               "start one with: mqtck spark serve") from exc
    # pyspark's own builder, not the Connect class's: it also switches pyspark.sql.functions to Connect's columns
    # for this process (SPARK_CONNECT_MODE_ENABLED), which the derivations build with.
    return SparkSession.builder.remote(url).getOrCreate()


#: What the JVM prints on stderr at every start whatever the log configuration: the module system's
#: notice for the vector API Spark's launcher always adds, and the log-level hint Spark prints for a
#: shell (PySpark's gateway counts as one). Exact prefixes: anything else passes through.
JVM_START_NOISE = (
    b"WARNING: Using incubator modules: jdk.incubator.vector",
    b'Setting default log level to "',
    b"To adjust logging level use sc.setLogLevel(newLevel).",
)


@contextmanager
def _quiet_jvm_start() -> Iterator[None]:
    """Start the JVM with its stderr on a pipe that a daemon thread copies to ours, dropping the start-up
    lines of :data:`JVM_START_NOISE` only, for the JVM's whole life (so its real errors still show).
    The JVM inherits the pipe as its stderr; our own stderr is restored as soon as it has started."""
    try:
        real = os.dup(2)
    except OSError:  # no stderr at all: nothing to filter
        yield
        return
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)
    try:
        threading.Thread(target=_copy_without_noise, args=(read_end, os.dup(real)), daemon=True,
                         name="jvm-stderr").start()
        yield
    finally:
        os.dup2(real, 2)
        os.close(real)


def _copy_without_noise(read_end: int, out: int) -> None:
    with os.fdopen(read_end, "rb", buffering=0) as source, os.fdopen(out, "wb", buffering=0) as sink:
        for line in iter(source.readline, b""):
            # After a Ctrl-C the JVM's shutdown messages are noise too: the CLI says "interrupted".
            if not line.startswith(JVM_START_NOISE) and not interrupts.interrupted():
                # If our stderr went away, keep draining: the JVM would block on a full pipe.
                with suppress(OSError):
                    sink.write(line)
