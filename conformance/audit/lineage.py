"""Cutting the lineage of an intermediate that several derivations read.

Why: the audit's plan is one tree, so an intermediate read by five derivations (the queue pass's reduced rows,
the consumption table, the lanes, the ownership intervals, the duplicate candidates) is five copies of its
subtree. Each DataFrame call makes Catalyst analyse the new node's whole plan, the final write optimises,
plans and serialises the whole tree, and every task deserialises its stage's part of it: at 20K events the
audit spent 9 s building a plan of some 2,000 nodes and 13 s running it, mostly per-stage overhead, not rows
(docs/audit.md, Performance). Replacing such an intermediate by a leaf that stands for its computed rows keeps
every later plan small: measured on the 20K-event audit, the derive phase went from 22.2 s to 14.6 s, with
the same findings.

In local mode (the default: the driver is the only executor) the leaf is a lazy local checkpoint: computed
once, at the first action that reads it, and kept in memory or on local disk like the ``persist`` it replaces.
On a cluster a local checkpoint's blocks live on one executor and die with it (Spark cannot recompute them:
the lineage is gone), and ``mqtck audit --master`` must survive a lost worker (tests/audit/test_cluster.py),
so there the intermediate is persisted instead: same reuse, the plan stays large.
"""

from __future__ import annotations

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession


def cut(frame: DataFrame) -> DataFrame:
    """``frame``, computed once however many derivations read it; a plan leaf where that is safe (local mode)."""
    if frame.sparkSession.sparkContext.master.startswith("local"):
        return frame.localCheckpoint(eager=False)
    return frame.persist(StorageLevel.MEMORY_AND_DISK)


def release(spark: SparkSession) -> None:
    """Drop the blocks of every intermediate kept for the audit just done. ``clearCache`` uncaches persisted
    DataFrames only; a local checkpoint's blocks would stay until the JVM collects its RDD, and a session that
    audits many traces (a test worker's) would pile them up in memory and on local disk."""
    for rdd in list(spark.sparkContext._jsc.getPersistentRDDs().values()):
        rdd.unpersist(False)
