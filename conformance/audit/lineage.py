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

Either way the intermediate is computed at once, in the background, while the driver goes on building the plan
(:class:`Materializer`): building it is one core's work on the driver's planning thread, and the executors would
otherwise wait for the final write to compute what was ready to compute seconds before.
"""

from __future__ import annotations

import contextlib
from concurrent.futures import Future, ThreadPoolExecutor

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

from conformance.audit import remote

#: How often a failed audit's background job group is cancelled again until its thread is done, seconds.
CANCEL_POLL_S = 0.5


class Materializer:
    """Computes the audit's cut intermediates in the background, in the order they were cut (each may read the
    ones before it), one Spark job each, while the driver's planning thread builds the rest of the plan.
    Measured on the 20K-event audit: the write (derive phase) 3.6 s -> 2.3 s, building the plan about the
    same (the background jobs take the second core, which planning leaves idle).

    A failure in the background is not reported from here: the final write reads the same blocks, recomputes
    what is missing, and fails with the real error if there is one."""

    #: The Spark job group of the background jobs (cancelled together when the audit fails).
    JOB_GROUP = "mqtck-materialize"

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mqtck-materialize")
        self._pending: list[Future[int]] = []

    def start(self, frame: DataFrame) -> None:
        self._pending.append(self._pool.submit(self._compute, frame))

    def _compute(self, frame: DataFrame) -> int:
        # Interrupted when cancelled: a task of these jobs only computes blocks that are dropped anyway.
        remote.tag_jobs(frame.sparkSession, self.JOB_GROUP, "computing an intermediate the audit reuses")
        return frame.count()

    def wait(self, spark: SparkSession, cancel: bool) -> None:
        """Wait for every job started (an audit's end: its blocks are about to be dropped); ``cancel`` them
        first when the audit failed (at 100M events one is minutes of work nobody will read). A job submitted
        just after a cancellation is not cancelled by it, so the group is cancelled until its thread is done."""
        pending, self._pending = self._pending, []
        if cancel:
            for future in pending:
                future.cancel()  # not started: never will be
        for future in pending:
            while cancel and not future.done():
                remote.cancel_jobs(spark, self.JOB_GROUP)
                with contextlib.suppress(Exception):
                    future.result(timeout=CANCEL_POLL_S)
            with contextlib.suppress(Exception):  # reported by the action that needed it (see the class)
                future.result()


#: One per process: the audits of a process run one after another (a test worker's share one session).
MATERIALIZER = Materializer()


def cut(frame: DataFrame) -> DataFrame:
    """``frame``, computed once however many derivations read it (now, in the background); a plan leaf where
    that is safe (local mode)."""
    if remote.is_local(frame.sparkSession):
        kept = frame.localCheckpoint(eager=False)
    else:
        kept = frame.persist(StorageLevel.MEMORY_AND_DISK)
    MATERIALIZER.start(kept)
    return kept


def release(spark: SparkSession, failed: bool = False) -> None:
    """Drop the blocks of every intermediate kept for the audit just done, once their background jobs have
    ended (cancelled if the audit ``failed``). ``clearCache`` uncaches persisted DataFrames only; a local
    checkpoint's blocks would stay until the JVM collects its RDD, and a session that audits many traces (a
    test worker's) would pile them up in memory and on local disk."""
    MATERIALIZER.wait(spark, cancel=failed)
    remote.drop_kept_blocks(spark)
