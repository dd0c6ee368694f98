"""The audit's execution engine: Spark's own (``spark``), or Spark with Apache DataFusion Comet's native operators
(``comet``): the same job, the same plans, the same findings; Comet runs the operators it supports on Arrow in
native code and leaves the rest to Spark.

Comet is one shaded jar per Spark line, resolved by name and version from Maven Central
(:func:`conformance.peers.maven.comet_classpath`), with its native library inside for Linux x86_64 and aarch64.
Comet 1.2.0 is built for Spark 4.1 (4.1.3), so the comet engine needs pyspark 4.1 in the auditing Python
(``pip install 'mqtck[spark,comet]'``; tox env ``audit-comet``), while the project's own default Spark may be
newer: a mismatch is refused in one line before any JVM starts, never run half-supported.
No Spark import here.
"""

from __future__ import annotations

import os
import platform
from importlib import metadata

from conformance.peers import PeerError
from conformance.peers.maven import comet_classpath

ENGINES = ("spark", "comet")
#: The engine when none is asked for: ``MQTCK_AUDIT_ENGINE`` if set (the CI lane that audits with Comet sets it),
#: else Spark's own. Comet is not the default: it was not faster on this project's audit (docs/audit.md, "The
#: comet engine").
DEFAULT_ENGINE = "spark"
ENGINE_ENV = "MQTCK_AUDIT_ENGINE"
#: The Comet release, and the Spark line its jar is built for.
COMET_VERSION = "1.2.0"
COMET_SPARK_LINE = "4.1"
#: The machines Comet's jar carries a native library for (``platform.machine()``).
COMET_MACHINES = ("x86_64", "amd64", "aarch64", "arm64")
#: Off-heap memory for Comet's native operators (its memory pool): Spark's heap stays the driver's, and this comes
#: on top of it.
COMET_OFF_HEAP = "512m"


class EngineUnavailable(Exception):
    """The engine asked for cannot run in this Python or on this machine (an environment error: exit 2)."""


def default_engine() -> str:
    return os.environ.get(ENGINE_ENV) or DEFAULT_ENGINE


def check_engine(name: str) -> str:
    """``name`` if it is an engine; ValueError naming the option and the choices otherwise."""
    if name not in ENGINES:
        raise ValueError(f"--engine must be one of {', '.join(ENGINES)}, got {name!r}")
    return name


def engine_conf(name: str) -> dict[str, str]:
    """The Spark settings that make a new session run on ``name`` (none for Spark's own engine).

    EngineUnavailable, in one line, when Comet cannot run here: another Spark line, another machine, or a jar
    Maven cannot resolve."""
    if check_engine(name) == "spark":
        return {}
    spark_version = _pyspark_version()
    if not spark_version.startswith(COMET_SPARK_LINE + "."):
        raise EngineUnavailable(
            f"the comet engine (Comet {COMET_VERSION}) needs Spark {COMET_SPARK_LINE}, this Python has pyspark "
            f"{spark_version}: pip install 'mqtck[spark,comet]' in its own environment, or tox -e audit-comet")
    if platform.system() != "Linux" or platform.machine().lower() not in COMET_MACHINES:
        raise EngineUnavailable(f"the comet engine has native code for Linux x86_64 and aarch64 only, not "
                                f"{platform.system()} {platform.machine()}: use --engine spark")
    try:
        jars = comet_classpath(COMET_VERSION)
    except PeerError as exc:
        raise EngineUnavailable(f"the comet engine's jar: {exc}") from exc
    classpath = os.pathsep.join(jars)
    return {
        "spark.jars": ",".join(jars),
        "spark.driver.extraClassPath": classpath,
        "spark.executor.extraClassPath": classpath,
        "spark.plugins": "org.apache.spark.CometPlugin",
        "spark.shuffle.manager": "org.apache.spark.sql.comet.execution.shuffle.CometShuffleManager",
        "spark.comet.enabled": "true",
        "spark.comet.exec.enabled": "true",
        "spark.comet.exec.shuffle.enabled": "true",
        "spark.memory.offHeap.enabled": "true",
        "spark.memory.offHeap.size": COMET_OFF_HEAP,
    }


def _pyspark_version() -> str:
    try:
        return metadata.version("pyspark")
    except metadata.PackageNotFoundError:
        return "none"
