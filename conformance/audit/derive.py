"""All derivations of trace-schema.md, assembled into one findings frame.

Each family lives in its own module and returns rows of the findings schema
(:data:`conformance.audit.schema.FINDING_SCHEMA`); this module only wires the shared inputs (the
consumption outcomes, the queue pass, the ownership intervals) and unions the results, so that one
Spark action computes every finding and shuffles shared by several derivations run once.
"""

from __future__ import annotations

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
from conformance.audit.queues import QueuePass, consumed_table


@dataclass
class Derivation:
    """The findings and the intermediate frames the report's metrics read again."""

    findings: DataFrame
    queue: QueuePass
    intervals: DataFrame


def derive(frames: TraceFrames) -> Derivation:
    outcome_rows, consumed = consumed_table(frames)
    queue = QueuePass(frames, consumed, [messages.candidate(), commits.candidate(),
                                         long_poll.candidate(frames.params), drops.candidate()], metrics.items)
    owned = ownership.intervals(frames)
    parts = [
        badrows.find(frames.rows, frames.params, frames.catalog.duplicate_seq),
        messages.find(frames, queue),
        commits.find(frames, queue),
        long_poll.find(frames, queue),
        offsets.find(frames),
        drops.find(frames, queue),
        ownership.find(frames, owned),
        pop.find(frames),
        permits.find(frames),
        duplicates.find(frames, outcome_rows, consumed),
    ]
    out = parts[0]
    for part in parts[1:]:
        out = out.union(part)
    return Derivation(out, queue, owned)
