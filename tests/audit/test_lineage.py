"""The audit's cut intermediates (``conformance.audit.lineage``): computed in the background as soon as they are
cut, reused by every reader, and, when an audit fails, their background jobs cancelled before their blocks are
dropped."""

from __future__ import annotations

import threading

#: How long a test waits for ``release`` before calling it hung (a guard, not a timing goal).
HUNG_S = 120


def _cached_partitions(spark) -> int:
    return sum(info.numCachedPartitions() for info in spark.sparkContext._jsc.sc().getRDDStorageInfo())


def test_a_cut_intermediate_is_computed_in_the_background_and_read_from_its_blocks(spark) -> None:
    from pyspark.sql import functions as F

    from conformance.audit.lineage import MATERIALIZER, cut, release

    frame = spark.range(0, 1_000, 1, 3).withColumn("square", F.col("id") * F.col("id"))
    kept = cut(frame)
    # No action of ours has run: the background job alone computed and kept every partition.
    MATERIALIZER.wait(spark, cancel=False)
    assert _cached_partitions(spark) == 3
    background_jobs = len(spark.sparkContext.statusTracker().getJobIdsForGroup(MATERIALIZER.JOB_GROUP))
    assert background_jobs >= 1
    assert kept.agg(F.sum("square")).first()[0] == sum(i * i for i in range(1_000))
    release(spark)
    assert _cached_partitions(spark) == 0
    assert spark.sparkContext._jsc.getPersistentRDDs().size() == 0


def test_a_failed_audit_cancels_the_background_jobs_before_dropping_their_blocks(spark) -> None:
    from pyspark.sql import functions as F

    from conformance.audit.lineage import cut, release

    # Hours of work on two cores: only a cancellation lets release return.
    endless = spark.range(0, 10**13, 1, 2).groupBy(F.col("id") % 7).count()
    cut(endless)
    done = threading.Event()
    releasing = threading.Thread(target=lambda: (release(spark, failed=True), done.set()), daemon=True)
    releasing.start()
    releasing.join(HUNG_S)
    assert done.is_set(), "release(failed=True) did not cancel the background job"
    assert spark.sparkContext._jsc.getPersistentRDDs().size() == 0
    assert not spark.sparkContext.statusTracker().getActiveJobsIds()
