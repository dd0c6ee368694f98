"""All derivations of trace-schema.md, assembled into one findings frame.

Each family lives in its own module and returns rows of the findings schema
(:data:`conformance.audit.schema.FINDING_SCHEMA`); this module only wires the shared inputs (the
consumption outcomes, the queue pass, the ownership intervals) and unions the results, so that one
Spark action computes every finding and shuffles shared by several derivations run once.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from pyspark.sql import DataFrame

from conformance.audit import (
    badrows,
    commits,
    drops,
    duplicates,
    long_poll,
    messages,
    metrics,
    offsets,
    ownership,
    permits,
    pop,
)
from conformance.audit.frames import TraceFrames
from conformance.audit.lineage import cut
from conformance.audit.queues import QueuePass, consumed_table


@dataclass
class Derivation:
    """The findings and the intermediate frames the report's metrics read again."""

    findings: DataFrame
    queue: QueuePass
    intervals: DataFrame


def derive(frames: TraceFrames) -> Derivation:
    outcome_rows, consumed = consumed_table(frames)
    # Building the plan is a few thousand JVM calls, most of them Catalyst analysing a node of a large
    # plan, on one thread while the executors wait (about 10 s of a small trace's audit). The derivations
    # that do not read the queue pass are built on a second thread meanwhile.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="mqtck-plan") as pool:
        independent = pool.submit(_independent, frames, outcome_rows, consumed)
        queue = QueuePass(frames, consumed, [messages.candidate(), commits.candidate(),
                                             long_poll.candidate(frames.params), drops.candidate()], metrics.items)
        on_queue = [messages.find(frames, queue), commits.find(frames, queue), long_poll.find(frames, queue),
                    drops.find(frames, queue)]
        owned, others = independent.result()
    out = on_queue[0]
    for part in [*on_queue[1:], *others]:
        out = out.union(part)  # every part has the findings schema's columns, in order
    return Derivation(out, queue, owned)


def _independent(frames: TraceFrames, outcome_rows: DataFrame,
                 consumed: DataFrame) -> tuple[DataFrame, list[DataFrame]]:
    """The ownership intervals and the derivations that do not read the queue pass."""
    owned = cut(ownership.intervals(frames))
    return owned, [
        badrows.find(frames.rows, frames.params, frames.catalog.duplicate_seq),
        offsets.find(frames),
        ownership.find(frames, owned),
        pop.find(frames),
        permits.find(frames),
        duplicates.find(frames, outcome_rows, consumed),
    ]
