"""The auditor's parameters: every constant the trace schema's derivations name, as a documented default.

trace-schema.md ("What the auditor derives from it") says each default is a seed constant and a
parameter; they are gathered here so the CLI, the spark-submit job and the tests change them in one
place, and so a report can print exactly what it was judged against.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from reference.rules.constants import DROP_GRACE_MS, LONG_POLLING_CHECK_INTERVAL_MS

#: Messages sent less than this before the horizon may still be in flight: unconsumed ones are
#: *pending*, not lost; POP deliveries whose invisibility ends inside it need not be revived yet.
SETTLE_MS = 60_000
#: Two clients may own one queue at once for at most one rebalance interval (seed 001: the
#: RebalanceService runs every 20 s, so the old owner drops the queue at its next round).
OVERLAP_WINDOW_MS = 20_000
#: Slack on top of suspend + hold-check interval before a held pull counts as answered late.
POLL_TOLERANCE_MS = 1_000
#: A held pull woken by a matching message should be answered within this (seed 000: the arrival
#: listener wakes it at once; the bound allows the re-execution and recording).
WAKE_BOUND_MS = 1_000
#: Permits and backlog both positive for longer than this with nothing dispatched is a freeze.
FREEZE_WINDOW_MS = 10_000
#: Witness events kept per finding, and findings kept as examples per category in summary.json.
MAX_WITNESSES = 5


@dataclass(frozen=True)
class AuditParams:
    """What the auditor judges a trace against. Times are milliseconds."""

    settle_ms: int = SETTLE_MS
    overlap_window_ms: int = OVERLAP_WINDOW_MS
    #: PullRequestHoldService's check interval: 5 s with long polling (the default); pass 1 000 (the
    #: short-polling time) for a broker that runs with long polling off.
    hold_check_interval_ms: int = LONG_POLLING_CHECK_INTERVAL_MS
    poll_tolerance_ms: int = POLL_TOLERANCE_MS
    wake_bound_ms: int = WAKE_BOUND_MS
    freeze_window_ms: int = FREEZE_WINDOW_MS
    max_witnesses: int = MAX_WITNESSES
    #: Less than this after a client's REVOKE, its COMMIT of the queue is the drop's own persist of the queue's
    #: progress (seed 001 §4, removeUnnecessaryMessageQueue), and a pull only the broker saw may have been sent
    #: before the drop: neither is a finding.
    drop_grace_ms: int = DROP_GRACE_MS
    #: A CONSUME with status LATER means the client handed the message to %RETRY%{group} (seed 001
    #: §5, send-back), after which RocketMQ lets the offset advance past it. With this on (the
    #: default) such a message no longer makes a later COMMIT unsafe; *lost* still requires an
    #: eventual CONSUME OK. Off, only OK settles a message, as the schema's sentence reads literally.
    retry_settles_commit: bool = True

    def to_dict(self) -> dict[str, object]:
        return asdict(self)
