"""What the audit asks of its driver, answered for a session of its own JVM (classic) and for a session of a warm
Spark Connect server (``mqtck spark serve``; ``mqtck audit --remote sc://HOST:PORT``).

Why a module: a Connect session has no SparkContext (the driver is the server's), so the few things the audit
reads or steers through it (the default parallelism, the master, job groups to cancel, blocks to drop) go through
here, and every derivation stays one DataFrame program for both. Connect's own means are used where classic
Spark's are not reachable: a tag in place of a job group, and a checkpoint released when its DataFrame is.
"""

from __future__ import annotations

from typing import Any

#: The scheme of a Spark Connect URL.
CONNECT_SCHEME = "sc://"


def parse_connect_url(url: str) -> tuple[str, int]:
    """(host, port) of ``sc://HOST:PORT[/;params]``; ValueError naming the option and the form otherwise."""
    rest = url.removeprefix(CONNECT_SCHEME) if url.startswith(CONNECT_SCHEME) else None
    host, _, port = (rest or "").split("/", 1)[0].split(";", 1)[0].rpartition(":")
    if rest is None or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--remote must be sc://HOST:PORT (a Spark Connect server), got {url!r}")
    return host.strip("[]"), int(port)


def is_remote(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (its class lives in ``pyspark.sql.connect``)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def default_parallelism(spark: Any, fallback: int) -> int:
    """The driver's default parallelism: its SparkContext's, or the server's ``spark.default.parallelism``
    (``mqtck spark serve`` sets it to the server's cores), else ``fallback``."""
    if not is_remote(spark):
        return int(spark.sparkContext.defaultParallelism)
    try:
        return int(spark.conf.get("spark.default.parallelism", str(fallback)))
    except ValueError:
        return fallback


def is_local(spark: Any) -> bool:
    """Whether the driver is the only executor (a ``local`` master), where a local checkpoint is safe."""
    master = spark.conf.get("spark.master", "") if is_remote(spark) else spark.sparkContext.master
    return str(master).startswith("local")


def tag_jobs(spark: Any, tag: str, description: str) -> None:
    """Mark the jobs this thread starts from now on with ``tag`` (interruptible together)."""
    if is_remote(spark):
        spark.addTag(tag)
    else:
        spark.sparkContext.setJobGroup(tag, description, interruptOnCancel=True)


def cancel_jobs(spark: Any, tag: str) -> None:
    """Cancel the running jobs marked with ``tag``."""
    if is_remote(spark):
        spark.interruptTag(tag)
    else:
        spark.sparkContext.cancelJobGroup(tag)


def drop_kept_blocks(spark: Any) -> None:
    """Drop the blocks of every intermediate the audit kept. A Connect server drops a checkpoint's when the
    client lets go of its DataFrame; persisted ones are uncached here."""
    if is_remote(spark):
        spark.catalog.clearCache()
        return
    for rdd in list(spark.sparkContext._jsc.getPersistentRDDs().values()):
        rdd.unpersist(False)
