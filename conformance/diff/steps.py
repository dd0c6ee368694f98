"""The differential run's step vocabulary: one operation on a target and what it observed.

A step is plain data (a frozen dataclass of small ints and names), so Hypothesis can draw and shrink it and a
replay file can hold it as JSON. Names are symbolic: ``topic`` 1 is the sequence's second topic, ``queue`` 5
is queue 5 mod that topic's queue count, ``handle`` 2 is the third receipt handle that side popped. Each side
resolves them against its own state (:class:`Side`), so both targets get the same request.

What a step returns is an **observation**: a JSON-safe dict of what any transport can show (response codes,
GetMessageStatus derived from them as over the wire, offsets, message bodies and tags, member lists). The
comparison (:mod:`conformance.diff.compare`) drops the fields a pair of implementations may legitimately
differ in.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from conformance.targets import FullTarget, MalformedAnswer, PendingPop, PendingPull, PullReply, TargetError
from conformance.targets.patience import visible
from reference.rules.codes import ResponseCode, derive_status

#: Simulated time a retention step moves on clocked targets: past fileReservedTime (72 h, RETAIN-1).
RETENTION_ADVANCE_MS = 73 * 3_600_000
#: Bodies of a "large" send: half of a commit-log segment (the in-process conformance store's is 64 KiB), so a
#: few sends span segments and a retention step has something to delete; at most MAX_LARGE_BODY_BYTES, well
#: under RocketMQ's maxMessageSize (4 MiB).
LARGE_BODY_BYTES = 32 * 1024
MAX_LARGE_BODY_BYTES = 1 << 20
#: Tags a step may carry or filter by; None sends an untagged message.
TAGS = ("A", "B", None)
#: Subscription expressions a pull, a long poll or a heartbeat may carry.
EXPRESSIONS = ("*", "A", "B", "A || B")


@dataclass
class Side:
    """One target's state during a sequence: how its symbolic names resolve."""

    target: FullTarget
    prefix: str
    queues: tuple[int, ...]
    #: Both targets are on simulated time: when an answer came is compared too (held_ms), not only its kind.
    exact_time: bool = False
    #: The body size of a large send (half a commit-log segment of the pair's layout).
    large_bytes: int = LARGE_BODY_BYTES
    #: Both targets expire retention on request (``retention_expire``); otherwise a retention step moves their
    #: clocks past fileReservedTime, on both alike (so that channels expire on both too).
    expire_on_request: bool = False
    #: Messages this side accepted per (topic index, queue id): where "the max offset" of a long poll is.
    sent: Counter[tuple[int, int]] = field(default_factory=Counter)
    #: Receipt handles popped so far, in order (a change of invisible time replaces its handle).
    handles: list[str] = field(default_factory=list)
    #: How many notifications of each connection were already observed.
    notified: Counter[int] = field(default_factory=Counter)
    #: The connections each group index has registered (by this program's heartbeats and unregisters).
    registered: dict[int, set[int]] = field(default_factory=dict)
    #: Messages dispatched to each permit consumer that were already observed.
    dispatched_seen: Counter[int] = field(default_factory=Counter)
    #: The permit consumers (consumer, topic index) this program subscribed.
    permit_consumers: set[tuple[int, int]] = field(default_factory=set)
    #: The type of each topic's permit subscription (topic index -> "exclusive", "failover", "shared"): its first
    #: accepted subscribe's.
    permit_types: dict[int, str] = field(default_factory=dict)

    def failover_choice(self, topic: int) -> bool:
        """Whether the permit subscription of topic ``topic`` is Failover with more than one consumer: which one is
        active is where implementations differ (FLOW-4's smallest client id; Pulsar's hash ring)."""
        index = self.topic_index(topic)
        consumers = sum(1 for _, t in self.permit_consumers if t == index)
        return self.permit_types.get(index) == "failover" and consumers > 1
    #: The simulated instant of this program's last restart (None: none, or real time): where the broker's
    #: periodic work starts its phase again.
    restarted_at: int | None = None

    def topic(self, index: int) -> str:
        return f"{self.prefix}T{index % len(self.queues)}"

    def topic_index(self, index: int) -> int:
        return index % len(self.queues)

    def queue(self, topic: int, queue: int) -> int:
        return queue % self.queues[topic % len(self.queues)]

    def group(self, index: int) -> str:
        return f"{self.prefix}G{index}"

    def conn(self, index: int) -> str:
        """A consumer connection of this sequence (its own: a channel of an earlier sequence expiring must not
        show here)."""
        return f"{self.prefix}k{index}"

    @property
    def clocked(self) -> bool:
        return "clock_control" in self.target.capabilities


def _body(step: int, k: int, large: int = 0) -> bytes:
    """Message ``k`` of step ``step``: recognisable, and ``large`` bytes long when asked."""
    stamp = f"s{step}m{k};".encode()
    return (stamp * (large // len(stamp) + 1))[:large] if large else stamp


def _pull_view(reply: PullReply, offset: int, side: Side) -> dict[str, Any]:
    """A pull's answer as every transport shows it: the GetMessageStatus derived from the code and the bounds
    (over the wire nothing more is visible, so the in-process detail is not compared); how long it was held
    when both targets are on simulated time."""
    try:
        number = ResponseCode[reply.code].value
    except KeyError:
        number = -1
    held = {"held_ms": reply.held_ms} if side.exact_time else {}
    return {**held,
        "code": reply.code,
        "status": derive_status(number, offset, reply.min_offset, reply.max_offset),
        "next": reply.next_begin_offset,
        "min": reply.min_offset,
        "max": reply.max_offset,
        "messages": [[m.queue_offset, m.tags, m.body[:24].decode("latin-1"), len(m.body)] for m in reply.messages],
    }


def _notified(side: Side) -> dict[str, list[str]]:
    """The groups each connection was notified about (NOTIFY_CONSUMER_IDS_CHANGED) since the last look: a
    registry step shows the notifications it caused (CGRP-4)."""
    out = {}
    for conn in range(CONNECTIONS):
        seen = side.target.notifications(side.conn(conn))
        new = seen[side.notified[conn]:]
        side.notified[conn] = len(seen)
        out[f"c{conn}"] = sorted(g.removeprefix(side.prefix) for g in new)
    return out


def _refused(error: TargetError) -> dict[str, Any]:
    """A refusal, by the field it names (INPUT-4): the code is the transport's own (a remoting ResponseCode, an
    HTTP front's error code), so it is not compared."""
    return {"refused": error.field or "(no field named)"}


@dataclass(frozen=True)
class Step:
    """One operation. ``needs``: the capabilities both targets must have; ``touches``: the requirements whose
    behaviour it shows (printed beside a divergence)."""

    kind: ClassVar[str] = ""
    needs: ClassVar[frozenset[str]] = frozenset()
    touches: ClassVar[tuple[str, ...]] = ()

    def run(self, side: Side, index: int) -> dict[str, Any]:
        raise NotImplementedError

    def describe(self) -> str:
        args = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self))
        return f"{self.kind}({args})"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, **dataclasses.asdict(self)}


@dataclass(frozen=True)
class Send(Step):
    kind: ClassVar[str] = "send"
    touches: ClassVar[tuple[str, ...]] = ("STORE-1", "STORE-9")
    topic: int = 0
    queue: int = 0
    tags: str | None = "A"
    count: int = 1
    large: bool = False

    def run(self, side: Side, index: int) -> dict[str, Any]:
        t, topic = side.topic_index(self.topic), side.topic(self.topic)
        q = side.queue(self.topic, self.queue)
        placed = []
        for k in range(self.count):
            try:
                receipt = side.target.send(topic, q, _body(index, k, side.large_bytes if self.large else 0), self.tags)
            except TargetError as error:
                placed.append(_refused(error))
                continue
            side.sent[(t, receipt.queue_id)] = max(side.sent[(t, receipt.queue_id)], receipt.queue_offset + 1)
            placed.append([receipt.queue_id, receipt.queue_offset])
        if side.sent[(t, q)]:
            visible(side.target, topic, q, side.sent[(t, q)])
        return {"placed": placed}


@dataclass(frozen=True)
class Pull(Step):
    kind: ClassVar[str] = "pull"
    needs: ClassVar[frozenset[str]] = frozenset({"pull"})
    touches: ClassVar[tuple[str, ...]] = ("PULL-1", "PULL-2", "PULL-5", "PULL-6", "PULL-7", "OFFSET-1", "OFFSET-2",
                                          "OFFSET-3", "OFFSET-4", "OFFSET-5", "OFFSET-6", "OFFSET-9")
    group: int = 0
    topic: int = 0
    queue: int = 0
    offset: int = 0
    max_nums: int = 32
    expression: str = "*"

    def run(self, side: Side, index: int) -> dict[str, Any]:
        try:
            reply = side.target.start_pull(
                side.group(self.group), side.topic(self.topic), side.queue(self.topic, self.queue), self.offset,
                max_nums=self.max_nums, expression=self.expression,
            ).result()
        except TargetError as error:
            return _refused(error)
        return _pull_view(reply, self.offset, side)


def _held_answer(start: Callable[[], PendingPull]) -> PullReply | dict[str, Any]:
    """Start a held pull (and whatever happens during its hold) and wait for its answer: the reply, or the
    observation of a refusal, or of no answer within the target's bound (hold time plus slack, LPOLL-3)."""
    try:
        return start().result()
    except TargetError as error:
        return _refused(error)
    except MalformedAnswer:
        raise
    except AssertionError:
        return {"answer": "none within the hold time plus slack"}


@dataclass(frozen=True)
class LongPoll(Step):
    """A pull at the queue's end that may be held: what happens during the hold (a send with ``send_tags``, a
    commit of ``commit_during``) is done on both targets before either answer is awaited; the pull may carry a
    commit offset of its own (``commit``, PULL-4)."""

    kind: ClassVar[str] = "long_poll"
    needs: ClassVar[frozenset[str]] = frozenset({"pull", "long_poll"})
    touches: ClassVar[tuple[str, ...]] = ("PULL-3", "PULL-4", "LPOLL-1", "LPOLL-2", "LPOLL-3", "LPOLL-4",
                                          "LPOLL-5", "LPOLL-7")
    group: int = 0
    topic: int = 0
    queue: int = 0
    suspend_ms: int = 1000
    expression: str = "*"
    send_tags: str | None = None
    send: bool = False
    commit: int | None = None
    commit_during: int | None = None

    def run(self, side: Side, index: int) -> dict[str, Any]:
        t, q = side.topic_index(self.topic), side.queue(self.topic, self.queue)
        topic, group = side.topic(self.topic), side.group(self.group)
        offset = side.sent[(t, q)]
        during: dict[str, Any] = {}

        def start() -> PendingPull:
            pending = side.target.start_pull(
                group, topic, q, offset, expression=self.expression, suspend_ms=self.suspend_ms,
                commit_offset=self.commit,
            )
            if self.commit_during is not None:
                side.target.commit_offset(group, topic, q, self.commit_during)
            if self.send:
                receipt = side.target.send(topic, q, _body(index, 0), self.send_tags)
                side.sent[(t, q)] = max(side.sent[(t, q)], receipt.queue_offset + 1)
                during["sent"] = [receipt.queue_id, receipt.queue_offset]
            return pending

        reply = _held_answer(start)
        if self.send:
            visible(side.target, topic, q, side.sent[(t, q)])
        if not isinstance(reply, PullReply):
            return reply
        view = _pull_view(reply, offset, side)
        if not side.exact_time and not reply.messages:
            # Real time: not the instant, but whether an answer without messages came well before the hold time
            # (woken by an arrival that does not match, LPOLL-5), which no tolerance of a check interval explains.
            view["early"] = reply.held_ms < self.suspend_ms // 2
        return {**during, **view}


@dataclass(frozen=True)
class RacedLongPoll(Step):
    """A held pull at the queue's end with a message (``tags``) stored after the broker's lookup found nothing and
    before it holds the request: RocketMQ issue #7358's interleaving, placed by race control. A broker that
    looks again after holding answers at once; one that does not, only at the hold's end (LPOLL-4)."""

    kind: ClassVar[str] = "raced_long_poll"
    needs: ClassVar[frozenset[str]] = frozenset({"pull", "long_poll", "race_control"})
    touches: ClassVar[tuple[str, ...]] = ("LPOLL-2", "LPOLL-4", "LPOLL-5")
    group: int = 0
    topic: int = 0
    queue: int = 0
    suspend_ms: int = 1000
    expression: str = "*"
    tags: str = "A"

    def run(self, side: Side, index: int) -> dict[str, Any]:
        t, q = side.topic_index(self.topic), side.queue(self.topic, self.queue)
        offset = side.sent[(t, q)]

        def start() -> PendingPull:
            pending = side.target.start_pull_racing(
                side.group(self.group), side.topic(self.topic), q, offset, [(_body(index, 0), self.tags)],
                expression=self.expression, suspend_ms=self.suspend_ms,
            )
            side.sent[(t, q)] += 1
            return pending

        reply = _held_answer(start)
        visible(side.target, side.topic(self.topic), q, side.sent[(t, q)])
        if not isinstance(reply, PullReply):
            return reply
        view = _pull_view(reply, offset, side)
        if not side.exact_time:
            # Real time: not the instant, but whether the raced message was seen at once or at the hold's end.
            view["at_once"] = reply.held_ms < self.suspend_ms // 2
        return view


@dataclass(frozen=True)
class CommitOffset(Step):
    kind: ClassVar[str] = "commit_offset"
    needs: ClassVar[frozenset[str]] = frozenset({"commit_offset"})
    touches: ClassVar[tuple[str, ...]] = ("QOFF-1", "QOFF-11")
    group: int = 0
    topic: int = 0
    queue: int = 0
    offset: int = 0

    def run(self, side: Side, index: int) -> dict[str, Any]:
        try:
            side.target.commit_offset(side.group(self.group), side.topic(self.topic),
                                      side.queue(self.topic, self.queue), self.offset)
        except TargetError as error:
            return _refused(error)
        return {"committed": True}


@dataclass(frozen=True)
class QueryOffset(Step):
    kind: ClassVar[str] = "query_offset"
    needs: ClassVar[frozenset[str]] = frozenset({"query_offset"})
    touches: ClassVar[tuple[str, ...]] = ("QOFF-11", "QOFF-12", "QOFF-13", "PULL-4")
    group: int = 0
    topic: int = 0
    queue: int = 0

    def run(self, side: Side, index: int) -> dict[str, Any]:
        try:
            code, offset = side.target.query_offset(side.group(self.group), side.topic(self.topic),
                                                    side.queue(self.topic, self.queue))
        except TargetError as error:
            return _refused(error)
        return {"code": code, "offset": offset if code == "SUCCESS" else None}


@dataclass(frozen=True)
class MinMax(Step):
    kind: ClassVar[str] = "min_max"
    touches: ClassVar[tuple[str, ...]] = ("PULL-6", "RETAIN-7", "RETAIN-9", "RETAIN-12")
    topic: int = 0
    queue: int = 0

    def run(self, side: Side, index: int) -> dict[str, Any]:
        lo, hi = side.target.min_max(side.topic(self.topic), side.queue(self.topic, self.queue))
        return {"min": lo, "max": hi}


@dataclass(frozen=True)
class Heartbeat(Step):
    """Connection ``conn`` (client id ``c<conn>``) heartbeats ``group`` subscribing to the first ``topics``
    topics with ``expression``."""

    kind: ClassVar[str] = "heartbeat"
    needs: ClassVar[frozenset[str]] = frozenset({"consumer_registry"})
    touches: ClassVar[tuple[str, ...]] = ("CGRP-1", "CGRP-2", "CGRP-3", "CGRP-4", "CGRP-7")
    conn: int = 0
    group: int = 0
    topics: int = 1
    expression: str = "*"
    sub_version: int = 0

    def run(self, side: Side, index: int) -> dict[str, Any]:
        subscriptions = {side.topic(i): self.expression for i in range(min(self.topics, len(side.queues)))}
        try:
            side.target.heartbeat(side.conn(self.conn), f"c{self.conn}", side.group(self.group), subscriptions,
                                  sub_version=self.sub_version)
        except TargetError as error:
            return _refused(error)
        side.registered.setdefault(self.group, set()).add(self.conn)
        return {"notified": _notified(side)}


@dataclass(frozen=True)
class Unregister(Step):
    kind: ClassVar[str] = "unregister"
    needs: ClassVar[frozenset[str]] = frozenset({"consumer_registry"})
    touches: ClassVar[tuple[str, ...]] = ("CGRP-5",)
    conn: int = 0
    group: int = 0

    def run(self, side: Side, index: int) -> dict[str, Any]:
        members = side.registered.setdefault(self.group, set())
        # Whether the program had registered this connection: the same on both sides (a rule may hold on it).
        member = self.conn in members
        try:
            side.target.unregister(side.conn(self.conn), side.group(self.group))
        except TargetError as error:
            return {"member": member, **_refused(error)}
        members.discard(self.conn)
        return {"member": member, "notified": _notified(side)}


@dataclass(frozen=True)
class Members(Step):
    """The group's consumer list, and the groups each connection was notified about since the last look."""

    kind: ClassVar[str] = "members"
    needs: ClassVar[frozenset[str]] = frozenset({"consumer_registry"})
    touches: ClassVar[tuple[str, ...]] = ("CGRP-4", "CGRP-5", "CGRP-6", "CGRP-7")
    group: int = 0

    def run(self, side: Side, index: int) -> dict[str, Any]:
        notified = _notified(side)
        return {"members": sorted(side.target.consumer_ids(side.group(self.group))), "notified": notified}


@dataclass(frozen=True)
class Advance(Step):
    kind: ClassVar[str] = "advance"
    needs: ClassVar[frozenset[str]] = frozenset({"clock_control"})
    touches: ClassVar[tuple[str, ...]] = ("CGRP-6", "REVIVE-2")
    ms: int = 1000

    def run(self, side: Side, index: int) -> dict[str, Any]:
        side.target.advance(self.ms)
        return {}


@dataclass(frozen=True)
class Restart(Step):
    kind: ClassVar[str] = "restart"
    needs: ClassVar[frozenset[str]] = frozenset({"restart"})
    touches: ClassVar[tuple[str, ...]] = ("STORE-5", "QOFF-2", "REVIVE-6")

    def run(self, side: Side, index: int) -> dict[str, Any]:
        side.target.restart()
        if side.exact_time:
            side.restarted_at = side.target.clock_now_ms()
        # A restart drops every connection (consumers register again): what its shutdown told the old ones is
        # not an answer of the broker to anything a client can still see.
        _notified(side)
        side.registered.clear()
        return {}


@dataclass(frozen=True)
class Retention(Step):
    """A clean run. ``expire``: every segment but the one being written counts as expired first (the runner's
    expiry, or fileReservedTime passed on a clocked target); otherwise a manual clean run now, on messages as
    young as they are (capability ``retention_control``: nothing young may go, RETAIN-1)."""

    kind: ClassVar[str] = "retention"
    touches: ClassVar[tuple[str, ...]] = ("RETAIN-1", "RETAIN-5", "RETAIN-6", "RETAIN-7", "RETAIN-9", "OFFSET-2",
                                          "OFFSET-5")
    expire: bool = True

    def run(self, side: Side, index: int) -> dict[str, Any]:
        if not self.expire:
            side.target.run_retention()
        elif side.expire_on_request:
            side.target.expire_retention()
        else:
            side.target.advance(RETENTION_ADVANCE_MS)
            side.target.run_retention()
        return {}


#: What a pop step does with what it popped: nothing, ack at once, ack after POP_ACK_LATER_MS (the checkpoint
#: of a short invisible time has left memory by then, REVIVE-1), or change the invisible time and ack with the
#: new handle (PACK-4, PACK-6).
POP_THEN = ("keep", "ack", "ack_later", "change_ack")
POP_ACK_LATER_MS = 3_000
#: In real time, how long a pop may take to answer at once before the message "sent during its hold" goes out.
#: A pop that found messages has answered by then, so the send cannot race into its batch on one side and not
#: the other (found by mqtck diff against 5.5.0, whose pop and send processors run on separate threads).
POP_SETTLE_S = 1.0


def _wait(side: Side, ms: int) -> None:
    """Let ``ms`` pass: simulated on a clocked target, real elsewhere (RemotingTarget.advance sleeps)."""
    side.target.advance(ms)


def _settle(pending: PendingPop, limit_s: float) -> None:
    """Give a request up to ``limit_s`` (real time) to be answered at once; return early when it is."""
    deadline = time.monotonic() + limit_s
    while not pending.done() and time.monotonic() < deadline:
        time.sleep(0.05)


@dataclass(frozen=True)
class Pop(Step):
    """A pop, held ``poll_ms`` when nothing is there (a message sent ``send_after_ms`` into the hold, POP-6), then
    what ``then`` says with the popped messages (:data:`POP_THEN`)."""

    kind: ClassVar[str] = "pop"
    needs: ClassVar[frozenset[str]] = frozenset({"pop"})
    touches: ClassVar[tuple[str, ...]] = ("POP-2", "POP-4", "POP-6", "PACK-1", "PACK-3", "PACK-4", "PACK-6",
                                          "REVIVE-2", "REVIVE-3", "REVIVE-5", "CGRP-4")
    group: int = 0
    topic: int = 0
    queue: int = -1
    max_nums: int = 8
    invisible_ms: int = 60_000
    then: str = "keep"
    poll_ms: int = 0
    send_after_ms: int | None = None

    def run(self, side: Side, index: int) -> dict[str, Any]:
        group, topic = side.group(self.group), side.topic(self.topic)
        q = -1 if self.queue < 0 else side.queue(self.topic, self.queue)
        out: dict[str, Any] = {}
        try:
            pending = side.target.pop(group, topic, q, self.max_nums, self.invisible_ms, self.poll_ms)
            if self.send_after_ms is not None:
                if not side.clocked:
                    _settle(pending, POP_SETTLE_S)
                _wait(side, self.send_after_ms)
                receipt = side.target.send(topic, max(q, 0), _body(index, 0), "A")
                out["sent"] = [receipt.queue_id, receipt.queue_offset]
                key = (side.topic_index(self.topic), receipt.queue_id)
                side.sent[key] = max(side.sent[key], receipt.queue_offset + 1)
            reply = pending.result()
            if self.send_after_ms is not None:
                # As after any send: a read in the next step sees it (found by mqtck diff against 5.5.0, which
                # builds its consume queue after acknowledging the send).
                visible(side.target, topic, receipt.queue_id, receipt.queue_offset + 1)
        except TargetError as error:
            return {**out, **_refused(error)}
        except MalformedAnswer:
            raise
        except AssertionError:
            return {**out, "answer": "none within the poll time plus slack"}
        if "consumer_registry" in side.target.capabilities:
            # A pop over gRPC starts a consumer (its settings register it in the group): the notifications that
            # join caused are the pop's (CGRP-4), not the next registry step's (found by mqtck diff against the
            # proxy, which registers gRPC consumers without notifying the group's members).
            out["notified"] = _notified(side)
        handles = [m.handle for m in reply.messages]
        out.update(code=reply.code, messages=sorted(
            [m.queue_id, m.queue_offset, m.body[:24].decode("latin-1"), m.tags, m.reconsume_times]
            for m in reply.messages
        ))
        if self.then == "ack_later" and handles:
            _wait(side, POP_ACK_LATER_MS)
        if self.then == "change_ack":
            try:
                handles = [side.target.change_invisible(group, topic, h, self.invisible_ms) for h in handles]
            except TargetError as error:
                return {**out, "change": _refused(error)}
        if self.then != "keep":
            acks = []
            for handle in handles:
                try:
                    side.target.ack(group, topic, handle)
                    acks.append("acked")
                except TargetError as error:
                    acks.append(error.code)
            out["acks"] = acks
        else:
            side.handles.extend(handles)
        return out


@dataclass(frozen=True)
class Ack(Step):
    """Ack the ``handle``-th receipt handle popped so far (nothing to do before the first pop)."""

    kind: ClassVar[str] = "ack"
    needs: ClassVar[frozenset[str]] = frozenset({"pop"})
    touches: ClassVar[tuple[str, ...]] = ("PACK-3", "PACK-5", "PACK-6", "PACK-7", "REVIVE-3")
    group: int = 0
    topic: int = 0
    handle: int = 0

    def run(self, side: Side, index: int) -> dict[str, Any]:
        if not side.handles:
            return {"skipped": "no handle yet"}
        try:
            handle = side.handles[self.handle % len(side.handles)]
            side.target.ack(side.group(self.group), side.topic(self.topic), handle)
        except TargetError as error:
            return _refused(error)
        return {"acked": True}


@dataclass(frozen=True)
class ChangeInvisible(Step):
    kind: ClassVar[str] = "change_invisible"
    needs: ClassVar[frozenset[str]] = frozenset({"pop"})
    touches: ClassVar[tuple[str, ...]] = ("PACK-4", "PACK-5", "PACK-6")
    group: int = 0
    topic: int = 0
    handle: int = 0
    invisible_ms: int = 10_000

    def run(self, side: Side, index: int) -> dict[str, Any]:
        if not side.handles:
            return {"skipped": "no handle yet"}
        at = self.handle % len(side.handles)
        try:
            side.handles[at] = side.target.change_invisible(side.group(self.group), side.topic(self.topic),
                                                            side.handles[at], self.invisible_ms)
        except TargetError as error:
            return _refused(error)
        return {"changed": True}


@dataclass(frozen=True)
class PermitSubscribe(Step):
    kind: ClassVar[str] = "permit_subscribe"
    needs: ClassVar[frozenset[str]] = frozenset({"flow_permits"})
    touches: ClassVar[tuple[str, ...]] = ("FLOW-1", "FLOW-4")
    consumer: int = 0
    topic: int = 0
    sub_type: str = "Exclusive"

    def run(self, side: Side, index: int) -> dict[str, Any]:
        # A consumer this program already subscribed to the topic subscribes again: said in the observation, since
        # implementations may answer it differently (one consumer per client id; Pulsar's same consumer id on its
        # connection) and an expectations file excuses that case only (`when = "again=True"`).
        again = {"again": True} if (self.consumer, side.topic_index(self.topic)) in side.permit_consumers else {}
        try:
            side.target.subscribe_permits(side.group(0), side.topic(self.topic), f"p{self.consumer}", self.sub_type)
        except TargetError as error:
            return {**again, **_refused(error)}
        side.permit_consumers.add((self.consumer, side.topic_index(self.topic)))
        side.permit_types.setdefault(side.topic_index(self.topic), self.sub_type.lower())
        return {**again, "subscribed": True}


@dataclass(frozen=True)
class PermitFlow(Step):
    """Grant ``permits``, send ``batch`` messages as one batch entry (0: none) to queue 0, and look at what the
    consumer was dispatched since the last look and how many permits it holds."""

    kind: ClassVar[str] = "permit_flow"
    needs: ClassVar[frozenset[str]] = frozenset({"flow_permits"})
    touches: ClassVar[tuple[str, ...]] = ("FLOW-1", "FLOW-2", "FLOW-3", "FLOW-5")
    consumer: int = 0
    topic: int = 0
    permits: int = 1
    batch: int = 0

    def run(self, side: Side, index: int) -> dict[str, Any]:
        group, client, topic = side.group(0), f"p{self.consumer}", side.topic(self.topic)
        # Said in the observation so that an expectations file can excuse which consumer is active (`when =
        # "failover=True"`) and nothing else.
        out: dict[str, Any] = {"failover": True} if side.failover_choice(self.topic) else {}
        try:
            if self.batch:
                side.target.send_batch(topic, 0, [_body(index, k) for k in range(self.batch)])
            side.target.flow(group, client, topic, self.permits)
            records = side.target.dispatched(group, client, topic)
            out["permits"] = side.target.permits(group, client, topic)
        except TargetError as error:
            return {**out, **_refused(error)}
        new = records[side.dispatched_seen[self.consumer]:]
        side.dispatched_seen[self.consumer] = len(records)
        out["dispatched"] = [[r.offset, r.batch_index, r.body.decode("latin-1"), r.redelivery_count] for r in new]
        return out


#: How many consumer connections a heartbeat may come from.
CONNECTIONS = 2
#: Every step kind by name (a replay file names them so).
STEP_KINDS: dict[str, type[Step]] = {
    cls.kind: cls
    for cls in (Send, Pull, LongPoll, RacedLongPoll, CommitOffset, QueryOffset, MinMax, Heartbeat, Unregister,
                Members, Advance, Restart, Retention, Pop, Ack, ChangeInvisible, PermitSubscribe, PermitFlow)
}


def step_from_json(data: dict[str, Any]) -> Step:
    """A step from its replay-file form; ValueError naming the kind or field if it is not one."""
    fields = dict(data)
    kind = fields.pop("kind", None)
    cls = STEP_KINDS.get(str(kind))
    if cls is None:
        raise ValueError(f"step kind {kind!r} is not one of {', '.join(sorted(STEP_KINDS))}")
    try:
        return cls(**fields)
    except TypeError as error:
        raise ValueError(f"step {kind}: {error}") from None


def runnable(step: Step, capabilities: frozenset[str]) -> bool:
    """Whether a target with ``capabilities`` can run ``step``."""
    if isinstance(step, Retention):
        if not step.expire:
            return "retention_control" in capabilities
        return "retention_expire" in capabilities or {"retention_control", "clock_control"} <= capabilities
    if isinstance(step, Restart):
        return "restart" in capabilities
    return step.needs <= capabilities
