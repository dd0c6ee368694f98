"""The simulator's judges: each reads what a run left (trace rows, or the broker at an instant) and returns
:class:`~reference.sim.findings.Finding` values naming the requirement broken.

===========  ===================================================================================================
``pull``     the pull and rebalance workload: drop semantics, start offsets, commit safety, at-least-once,
             duplicates and their causes, ownership at the end (:func:`check_trace`)
``pop``      the POP workload: lost, early or unattributed redeliveries and revives, reconsume times
             (:func:`audit_pop`)
``permits``  the permit workload: overrun and freeze while a run plays, redelivery counts from its trace
===========  ===================================================================================================

The ones that read trace rows only (``pull``, ``pop``) are compared with the Spark auditor on the same traces
(``tests/audit/test_judges_vs_spark.py``). The workloads (``simulation``, ``pop_sim``, ``permit_sim``) call them;
the judges import no workload.
"""

from reference.sim.judges.permits import (
    PERMIT_EVENTS,
    PERMIT_REQUIREMENTS,
    freeze_findings,
    overrun_findings,
    permit_finding,
    redelivery_count_findings,
)
from reference.sim.judges.pop import POP_EVENTS, POP_REQUIREMENTS, audit_pop
from reference.sim.judges.pull import CAUSES, CHECKS, CheckReport, TraceIndex, check_drop_semantics, check_trace

__all__ = [
    "CAUSES", "CHECKS", "PERMIT_EVENTS", "PERMIT_REQUIREMENTS", "POP_EVENTS", "POP_REQUIREMENTS", "CheckReport",
    "TraceIndex", "audit_pop", "check_drop_semantics", "check_trace", "freeze_findings", "overrun_findings",
    "permit_finding", "redelivery_count_findings",
]
