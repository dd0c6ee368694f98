"""A program: the topics a sequence starts with and its steps; the Hypothesis strategy that draws one.

Steps are drawn only from what both targets can run (:func:`conformance.diff.steps.runnable`). Hypothesis
shrinks a program by shortening its step list and lowering each field towards its first choice, so the
strategies list the simplest choice first (offset 0, tag "A", one message, the first topic).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from conformance.diff import steps as s

#: At most this many topics and queues per topic in one program.
MAX_TOPICS = 2
MAX_QUEUES = 3
#: Offsets a pull may ask for: around a short queue's end, below 0, and far past the end.
FAR_OFFSETS = (1_000, 2**31 - 1)
#: Hold times on clocked targets (simulated time costs nothing), and in real time (kept short: a real broker
#: answers within the hold time plus its 5 s check, LPOLL-3).
CLOCKED_SUSPEND_MS = (1_000, 15_000, 30_000)
REAL_TIME_SUSPEND_MS = (500, 1_000)
#: Invisible times of a pop: the default, and one short enough that its checkpoint leaves memory at once and
#: the message is revived within one advance step (REVIVE-1, REVIVE-2).
POP_INVISIBLE_MS = (60_000, 5_000)
#: A change of invisible time: longer, and short enough to be revived within one advance step.
CHANGE_INVISIBLE_MS = (10_000, 1_000)
#: In real time, invisible times no program outlives (12 steps of a few seconds each): when a message is revived
#: depends on each broker's revive scan, so a pop near the end of an invisible time answers by chance on a real
#: broker (found by mqtck diff against 5.5.0: revived within a second there, still invisible in the reference's
#: lockstep clock). Revival is compared on clocked pairs, and gated over the wire by the REVIVE tests.
REAL_TIME_INVISIBLE_MS = (300_000,)
REAL_TIME_CHANGE_INVISIBLE_MS = (120_000,)
#: A held pop's poll time, and when into the hold a message arrives: long enough on simulated time that an
#: invisible time counted from the request instead of from the read (PACK-1) has already run out.
CLOCKED_POLL_MS, CLOCKED_SEND_AFTER_MS = 30_000, 20_000
#: In real time the send only has to land inside the hold, after the pop's settle (POP_SETTLE_S, 1 s): sent at most
#: 2 s into a 4 s hold, the 2 s margin the earlier 3 s of 5 s had, one second less of every hold and every send.
REAL_TIME_POLL_MS, REAL_TIME_SEND_AFTER_MS = 4_000, 1_000
#: Groups, topics and queues a step names: mostly the first, so that the steps of one program meet on one group
#: and one queue (a retention step and a pull below the new min offset, a pop and a late ack of the same message).
GROUPS = (0, 0, 0, 1)
TOPICS = (0, 0, 0, 1)
QUEUES = (0, 0, 1, 2)
#: A pop's queue: mostly every queue of the topic (-1), so that it finds what the program sent.
POP_QUEUES = (-1, -1, -1, 0, 1, 2)
#: The batch of a pop over every queue: more than a program sends, so that it takes all there is. Where a smaller
#: batch stops depends on the queue it starts at, randomQ mod the queue count (POP-2), random on a real broker:
#: two correct brokers then answer with different messages (found by mqtck diff against 5.5.0), and keep
#: different messages in flight from there on.
EVERY_QUEUE_BATCH = 32
#: Simulated time an advance step moves: past an ack interval, an invisible time, a channel's expiry.
ADVANCE_MS = (3_000, 9_000, 61_000, 131_000)


@dataclass(frozen=True)
class Program:
    queues: tuple[int, ...]
    steps: tuple[s.Step, ...]

    def to_json(self) -> dict[str, Any]:
        return {"queues": list(self.queues), "steps": [step.to_json() for step in self.steps]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Program:
        queues = data.get("queues")
        if not (isinstance(queues, list) and queues and all(isinstance(q, int) and 1 <= q <= 1024 for q in queues)):
            raise ValueError("queues: a non-empty list of queue counts in [1, 1024]")
        raw = data.get("steps")
        if not isinstance(raw, list):
            raise ValueError("steps: a list of steps")
        return cls(tuple(queues), tuple(s.step_from_json(step) for step in raw))


def _offsets() -> st.SearchStrategy[int]:
    return st.one_of(st.integers(0, 8), st.just(-1), st.sampled_from(FAR_OFFSETS))


def _whole_batch_from_every_queue(pop: s.Pop) -> s.Pop:
    return dataclasses.replace(pop, max_nums=EVERY_QUEUE_BATCH) if pop.queue < 0 else pop


def _reads_queues(capabilities: frozenset[str]) -> bool:
    """Whether a step reads other queues than queue 0: only pulls and pops do (permit subscriptions are on queue 0).
    Without them a program's topics have one queue, as a Pulsar topic has (pulsar:// targets)."""
    return bool({"pull", "pop"} & capabilities)


def step_strategies(capabilities: frozenset[str]) -> dict[type[s.Step], st.SearchStrategy[s.Step]]:
    """A strategy per step kind that a target with ``capabilities`` runs (both targets' intersection)."""
    clocked = "clock_control" in capabilities
    idx = st.sampled_from(TOPICS)
    queue = st.sampled_from(QUEUES if _reads_queues(capabilities) else (0,))
    group = st.sampled_from(GROUPS)
    conn = st.integers(0, s.CONNECTIONS - 1)
    tags = st.sampled_from(s.TAGS)
    expression = st.sampled_from(s.EXPRESSIONS)
    retention = s.runnable(s.Retention(), capabilities)
    poll_ms, send_after_ms = (CLOCKED_POLL_MS, CLOCKED_SEND_AFTER_MS) if clocked else (REAL_TIME_POLL_MS,
                                                                                       REAL_TIME_SEND_AFTER_MS)
    every: dict[type[s.Step], st.SearchStrategy[s.Step]] = {
        s.Send: st.builds(s.Send, idx, queue, tags, st.integers(1, 3),
                          st.booleans() if retention else st.just(False)),
        s.Pull: st.builds(s.Pull, group, idx, queue, _offsets(), st.sampled_from((32, 1, 2)), expression),
        s.LongPoll: st.builds(
            s.LongPoll, group, idx, queue,
            st.sampled_from(CLOCKED_SUSPEND_MS if clocked else REAL_TIME_SUSPEND_MS), expression, tags,
            st.booleans(), st.none() | st.integers(0, 4), st.none() | st.integers(0, 4),
        ),
        s.RacedLongPoll: st.builds(
            s.RacedLongPoll, group, idx, queue,
            st.sampled_from(CLOCKED_SUSPEND_MS if clocked else REAL_TIME_SUSPEND_MS), expression,
            st.sampled_from(("A", "B")),
        ),
        s.CommitOffset: st.builds(s.CommitOffset, group, idx, queue, st.integers(0, 6)),
        s.QueryOffset: st.builds(s.QueryOffset, group, idx, queue),
        s.MinMax: st.builds(s.MinMax, idx, queue),
        s.Heartbeat: st.builds(s.Heartbeat, conn, group, st.integers(1, MAX_TOPICS), expression, st.integers(0, 2)),
        s.Unregister: st.builds(s.Unregister, conn, group),
        s.Members: st.builds(s.Members, group),
        s.Advance: st.builds(s.Advance, st.sampled_from(ADVANCE_MS)),
        s.Restart: st.just(s.Restart()),
        s.Retention: st.builds(s.Retention, st.booleans()) if "retention_control" in capabilities
        else st.just(s.Retention()),
        s.Pop: st.builds(s.Pop, group, idx, st.sampled_from(POP_QUEUES), st.sampled_from((8, 1, 32)),
                         st.sampled_from(POP_INVISIBLE_MS if clocked else REAL_TIME_INVISIBLE_MS),
                         st.sampled_from(s.POP_THEN),
                         st.sampled_from((0, poll_ms)), st.none() | st.sampled_from((0, send_after_ms)),
                         ).map(_whole_batch_from_every_queue),
        s.Ack: st.builds(s.Ack, group, idx, st.integers(0, 7)),
        s.ChangeInvisible: st.builds(
            s.ChangeInvisible, group, idx, st.integers(0, 7),
            st.sampled_from(CHANGE_INVISIBLE_MS if clocked else REAL_TIME_CHANGE_INVISIBLE_MS),
        ),
        s.PermitSubscribe: st.builds(s.PermitSubscribe, st.integers(0, 1), idx,
                                     st.sampled_from(("Exclusive", "Shared", "Failover"))),
        s.PermitFlow: st.builds(s.PermitFlow, st.integers(0, 1), idx, st.integers(1, 4), st.integers(0, 3)),
    }
    return {cls: strategy for cls, strategy in every.items() if s.runnable(cls(), capabilities)}


#: Families of steps that act on the same state. A program draws from one family (or from every step, the
#: last choice), so that the few steps a behaviour needs (sends, a retention run, a pull below the new min
#: offset) meet often; a family's first kinds are its own, the rest what it needs around them. A kind listed
#: twice is drawn twice as often: the steps that make state (sends) and the ones that look at it (pulls, pops)
#: are the common ones, a restart (seconds on a JVM broker) the rare one.
FAMILIES: tuple[tuple[type[s.Step], ...], ...] = (
    (s.Pull, s.Pull, s.Retention, s.MinMax, s.Send, s.Send, s.QueryOffset, s.CommitOffset, s.Restart),
    (s.LongPoll, s.LongPoll, s.RacedLongPoll, s.Send, s.Pull, s.QueryOffset, s.CommitOffset, s.Advance),
    (s.Heartbeat, s.Heartbeat, s.Unregister, s.Members, s.Members, s.Advance, s.Restart),
    (s.Pop, s.Pop, s.Ack, s.ChangeInvisible, s.Send, s.Send, s.Send, s.Advance, s.Advance, s.Restart),
    (s.PermitSubscribe, s.PermitFlow, s.PermitFlow, s.Send, s.Send, s.Advance, s.Restart),
)


def _one_restart(steps: tuple[s.Step, ...]) -> tuple[s.Step, ...]:
    """``steps`` without the restarts after the first. For a pair on real time: a restart of a JVM broker or proxy
    costs 30-40 s on a loaded machine (98 % of the wall time of a profiled run against rocketmq-proxy-5.5.0), and a
    second restart in one program compares what the first did (the same store read back after a clean shutdown)."""
    restarts = [i for i, step in enumerate(steps) if isinstance(step, s.Restart)]
    return tuple(step for i, step in enumerate(steps) if i not in restarts[1:])


def programs(capabilities: frozenset[str], max_steps: int, without: frozenset[str] = frozenset()
             ) -> st.SearchStrategy[Program]:
    """Programs of 1 to ``max_steps`` steps over 1 to :data:`MAX_TOPICS` topics, each from one family of
    steps or from all (step kinds named in ``without`` never). The length is drawn first, uniformly (Hypothesis's
    own lists and integers favour the shortest, and a fifth of all programs were one step long, which never
    holds the three or four steps a behaviour needs), and shrinks towards 1 all the same."""
    kinds = {cls: strategy for cls, strategy in step_strategies(capabilities).items() if cls.kind not in without}
    if not kinds:
        raise ValueError("no step kind is left to draw: both targets lack the capabilities, or --without took all")
    families = []
    for family in FAMILIES:
        if family[0] not in kinds:
            continue
        drawn = [kinds[cls] for cls in family if cls in kinds]
        if s.Retention in family and s.Retention in kinds:
            # Retention deletes only whole segments: its family also sends large messages, two or three at once.
            drawn.append(st.builds(s.Send, st.sampled_from(TOPICS), st.sampled_from(QUEUES),  # retention: pulls
                                   st.sampled_from(s.TAGS), st.integers(2, 3), st.just(True)))
        families.append(drawn)
    families.append(list(kinds.values()))
    step_lists = st.sampled_from(families).flatmap(lambda family: st.sampled_from(range(1, max_steps + 1)).flatmap(
        lambda n: st.lists(st.one_of(*family), min_size=n, max_size=n).map(tuple)
    ))
    if "clock_control" not in capabilities:
        step_lists = step_lists.map(_one_restart)
    return st.builds(
        Program,
        st.lists(st.integers(1, MAX_QUEUES if _reads_queues(capabilities) else 1), min_size=1,
                 max_size=MAX_TOPICS).map(tuple),
        step_lists,
    )
