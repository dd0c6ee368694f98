"""The scenarios a client under test is run through, and what each one can judge.

Each scenario gets a fresh topic and group on the same broker, is prepared through the broker core before
the client starts, and runs the client (twice when the scenario kills it). Besides the client's own steps, a
scenario may cause one fault on the broker's side at a set time:

- a second group member joins and takes half the queues (``rebalance``);
- the client is killed with SIGKILL and started again with the same group (``kill_at_s``): the new instance
  must start where the group's committed offsets are;
- the broker restarts cleanly on the same data and address (``restart_broker_at_s``): its connections close, held
  pulls are dropped and the client must come back;
- retention passes a slow consumer (``retention_at_s``): every commit-log segment but the one being written
  expires, so the queue's min offset jumps past the client's next pull (PULL_OFFSET_MOVED from OFFSET_TOO_SMALL,
  seed 002).

A moved offset is also provoked without retention: a group offset preset *above* a queue's max makes the broker
answer PULL_OFFSET_MOVED with nextBeginOffset 0 (seed 002: OFFSET_OVERFLOW_BADLY with min 0).
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Body of a prefilled message (about 100 bytes, as the conformance suite's ``fill``).
PREFILL_BODY = b"mqtck-client-check-" * 5
#: The offset preset above the max of a prefilled queue, to provoke PULL_OFFSET_MOVED.
OFFSET_ABOVE_MAX = 1_000_000
#: How long the offset-moved scenario runs. The seeds' client (CLIENT-4, the Java push consumer's OFFSET_ILLEGAL
#: branch) does not pull a moved queue again at once: it drops it, commits nextBeginOffset 10 s later and takes
#: it up again at its next rebalance (every 20 s). 35 s leaves room for that, so CCLIENT-1 can judge such a
#: client instead of calling it not applicable. (Every scenario's clock starts at the client's first heartbeat.)
OFFSET_MOVED_DURATION_S = 35.0
#: When the consumer-killed scenario kills the client. The Java lite-pull consumer commits only by its periodic
#: persist (every 5 s, from 10 s after it starts): at 15 s after its first heartbeat every client has committed
#: at least once, so its successor has a committed offset to start from.
KILL_AT_S = 15.0
#: How much longer than :data:`KILL_AT_S` the harness waits, at most, for the client's first commit of the topic
#: before it kills it. On a loaded machine a JVM client's periodic persist can come after 15 s; killed before it,
#: the successor has no committed offset to start from and CCLIENT-7 has no evidence (a CI run once called the
#: Java lite-pull consumer's CCLIENT-7 not applicable so). A client that never commits is killed at the end of the
#: wait, and CCLIENT-7 is then rightly not applicable.
KILL_COMMIT_WAIT_S = 20.0
#: When the broker-restarted scenario restarts the broker (the client pulls every queue by then).
RESTART_BROKER_AT_S = 6.0
#: When the retention scenario expires the commit log: the slow listener holds about a threshold's worth of
#: messages by then and the client pulls ahead of them.
RETENTION_AT_S = 6.0
#: After the broker's return, how long a client may take to pull again (CCLIENT-9). A pull refused meanwhile is
#: pulled again after 3 s (CLIENT-9); the restarted broker knows the group again only after the client's next
#: heartbeat, every 30 s in RocketMQ's clients (ClientConfig.heartbeatBrokerInterval); + 7 s of slack.
RESUME_WITHIN_S = 40.0
#: Seed 001 / REBAL-1: rebalanceInterval (20 s). A client that missed the membership notification
#: still rebalances within one interval, so pulls of a revoked queue are tolerated that long after the join.
REBALANCE_INTERVAL_S = 20.0
#: Slack added to the rebalance interval: process scheduling and the in-flight pull's answer.
REBALANCE_SLACK_S = 2.0
#: How long the rebalance scenario waits for the client to pull every queue before it adds the member.
OWN_ALL_QUEUES_WITHIN_S = 15.0
#: After the rebalance grace has passed, how long the harness still watches the revoked queues (CCLIENT-4):
#: the rebalance scenario ends this long after join + grace, whenever the join came.
REVOKED_WATCH_S = 6.0
#: The rebalance scenario's longest run: room for the latest join, its grace and the watch after it.
REBALANCE_DURATION_S = OWN_ALL_QUEUES_WITHIN_S + REBALANCE_INTERVAL_S + REBALANCE_SLACK_S + REVOKED_WATCH_S
#: Once a scenario has all the evidence its fault can give (the killed client's successor, or the client after
#: the broker's return, pulled every queue), it ends this much later instead of running its full duration.
EVIDENCE_GRACE_S = 2.0


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
    #: Kill the client (SIGKILL to its process group) this long after it started, and start it again at once.
    kill_at_s: float | None = None
    #: Restart the broker cleanly this long after the client started.
    restart_broker_at_s: float | None = None
    #: Expire every commit-log segment but the one being written this long after the client started.
    retention_at_s: float | None = None


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
            queues=4, prefill=10, rebalance=True, duration_s=REBALANCE_DURATION_S, judges=("CCLIENT-4", "CCLIENT-3"),
        ),
        Scenario(
            "flow-control",
            "3000 messages in one queue and a listener that takes 20 ms per message: the cache fills up",
            queues=1, prefill=3000, consume_delay_ms=20, duration_s=10.0, judges=("CCLIENT-5", "CCLIENT-3"),
        ),
        Scenario(
            "consumer-killed",
            f"a slow listener on 2 queues of 2000 messages; at {KILL_AT_S:g} s the client is killed with SIGKILL and "
            "started again with the same group: the new instance starts where the group's committed offsets are",
            queues=2, prefill=2000, consume_delay_ms=100, kill_at_s=KILL_AT_S, duration_s=KILL_AT_S + 20.0,
            judges=("CCLIENT-7", "CCLIENT-3"),
        ),
        Scenario(
            "retention",
            f"3000 messages in one queue and a listener that takes 100 ms per message; at {RETENTION_AT_S:g} s "
            "retention deletes every commit-log segment but the last: the client's next pull is below the queue's "
            "min offset",
            queues=1, prefill=3000, consume_delay_ms=100, retention_at_s=RETENTION_AT_S,
            duration_s=OFFSET_MOVED_DURATION_S, judges=("CCLIENT-1", "CCLIENT-3", "CCLIENT-6"),
        ),
        Scenario(
            "broker-restarted",
            f"2 queues of 2000 messages and a slow listener; at {RESTART_BROKER_AT_S:g} s the broker restarts cleanly "
            "(connections closed, held pulls dropped): the client comes back and pulls on from where it was",
            queues=2, prefill=2000, consume_delay_ms=100, restart_broker_at_s=RESTART_BROKER_AT_S,
            duration_s=RESTART_BROKER_AT_S + RESUME_WITHIN_S + EVIDENCE_GRACE_S,
            judges=("CCLIENT-8", "CCLIENT-9", "CCLIENT-3"),
        ),
    )
}
