"""The scenarios a client under test is run through, and what each one can judge.

Each scenario gets a fresh topic and group on the same broker, is prepared through the broker core before
the client starts, and runs the client once. Offsets are provoked without retention (which needs days of
simulated time): a group offset preset *above* a queue's max makes the broker answer PULL_OFFSET_MOVED with
nextBeginOffset 0 (seed 002: OFFSET_OVERFLOW_BADLY with min 0), the same correction path as an offset below
the min after retention.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Body of a prefilled message (about 100 bytes, as the conformance suite's ``fill``).
PREFILL_BODY = b"mqtck-client-check-" * 5
#: The offset preset above the max of a prefilled queue, to provoke PULL_OFFSET_MOVED.
OFFSET_ABOVE_MAX = 1_000_000
#: How long the offset-moved scenario runs. The seeds' client (CLIENT-4, the Java push consumer's OFFSET_ILLEGAL
#: branch) does not pull a moved queue again at once: it drops it, commits nextBeginOffset 10 s later and takes
#: it up again at its next rebalance (every 20 s). 35 s leaves room for that and for a JVM's start (about 2 s),
#: so CCLIENT-1 can judge such a client instead of calling it not applicable.
OFFSET_MOVED_DURATION_S = 35.0


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    queues: int
    #: Messages stored in every queue before the client starts.
    prefill: int
    #: Requirement ids this scenario gives evidence for.
    judges: tuple[str, ...]
    #: Group offsets committed before the client starts: queue id -> offset.
    preset: dict[int, int] = field(default_factory=dict)
    #: MQTCK_CONSUME_DELAY_MS for the client's listener (a slow listener fills its cache).
    consume_delay_ms: int = 0
    #: Register a second member of the group once the client pulls every queue (it takes some of them).
    rebalance: bool = False
    #: How long the client runs (MQTCK_DURATION_S).
    duration_s: float = 8.0


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "offset-moved",
            "queue 0's group offset preset above its max: the client gets PULL_OFFSET_MOVED; idle queues give "
            "PULL_NOT_FOUND once caught up",
            queues=2, prefill=40, preset={0: OFFSET_ABOVE_MAX},
            judges=("CCLIENT-1", "CCLIENT-2", "CCLIENT-3", "CCLIENT-6"),
            duration_s=OFFSET_MOVED_DURATION_S,
        ),
        Scenario(
            "rebalance",
            "a second member joins the group once the client pulls every queue and takes half of them",
            queues=4, prefill=10, rebalance=True, duration_s=30.0, judges=("CCLIENT-4", "CCLIENT-3"),
        ),
        Scenario(
            "flow-control",
            "3000 messages in one queue and a listener that takes 20 ms per message: the cache fills up",
            queues=1, prefill=3000, consume_delay_ms=20, duration_s=10.0, judges=("CCLIENT-5", "CCLIENT-3"),
        ),
    )
}
