"""The pull and rebalance judge: the client's promises, judged from trace rows alone (schema v1).

Theory of operation
-------------------
The simulator, the property suites and the conformance suite all judge a run the same way: by its
rows. :func:`check_trace` indexes them once (stable-sorted by ``ts``; rows with equal ``ts`` keep the
order they were recorded in) and runs each check, which returns :class:`Finding` values naming the
requirement they break, with the rows that prove it:

======================  ===========  ==================================================================
check                   requirement  finding
======================  ===========  ==================================================================
pull after drop         REBAL-4      a client's PULL_REQ for a queue after its REVOKE, before an ASSIGN
commit after drop       REBAL-5      a client's COMMIT for a queue after its REVOKE, before an ASSIGN
start not committed     REBAL-6      an ASSIGN whose offset is not the committed offset of the queue
unsafe commit           CONSUME-2    a COMMIT past an expected message not yet consumed (or handed over)
lost                    ALO-1/ALO-2  an expected message never consumed OK by the group / each consumer
                        ALO-4        ... broadcasting, sent while that consumer was down before it came back
duplicate, no cause     ALO-3        a second OK consumption with no retry, crash, restart or REVOKE
ownership               REBAL-2/3    at the end, a queue without exactly one owner (clustering), or a
                                     live broadcasting consumer without every queue
======================  ===========  ==================================================================

Words used below. A message is **expected** by a clustering group when it was SENT to a topic the
group subscribes, its tag matches the expression, and its offset is at or above the group's **start
offset** for the queue (the offset of the first ASSIGN of that queue to any member; per consumer in
broadcasting). It is **expired** when a RETENTION row raised its queue's min offset above it before
it was settled. It is **settled** from its queue's point of view when a member consumed it OK, or
handed it over (sent back to %RETRY% or %DLQ%, or, broadcasting, discarded it after a failure); it
is **done** when the group consumed it OK from any queue (original or retry), dead-lettered it or,
broadcasting, discarded it. A handed-over copy that retention may have deleted before it was
consumed (a RETENTION of a schedule or retry queue after the hand-over) is excused as expired.
"""

from __future__ import annotations

import heapq
import json
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from reference.rules.constants import DROP_GRACE_MS
from reference.rules.filter import SubscriptionData
from reference.rules.topics import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX, SCHEDULE_TOPIC
from reference.sim.findings import Finding

PULL_AFTER_DROP = "REBAL-4"
COMMIT_AFTER_DROP = "REBAL-5"
START_NOT_COMMITTED = "REBAL-6"
UNSAFE_COMMIT = "CONSUME-2"
LOST_CLUSTERING = "ALO-1"
LOST_BROADCASTING = "ALO-2"
#: Broadcasting, a message sent while the consumer was down (between its CRASH or UNSUBSCRIBE and its next
#: SUBSCRIBE): the come-back clause, split from ALO-2 by the clause review (upstream LocalFileOffsetStore).
LOST_BROADCASTING_WHILE_DOWN = "ALO-4"
DUPLICATE_WITHOUT_CAUSE = "ALO-3"
OWNERSHIP_CLUSTERING = "REBAL-2"
OWNERSHIP_BROADCASTING = "REBAL-3"

#: Duplicate causes, in the order they are tried.
CAUSES = ("retry", "crash", "broker_restart", "shutdown", "offset_moved", "rebalance")


@dataclass
class CheckReport:
    findings: list[Finding] = field(default_factory=list)
    #: Duplicate OK consumptions by cause (``unknown`` ones are also findings).
    duplicates: Counter[str] = field(default_factory=Counter)
    stats: Counter[str] = field(default_factory=Counter)

    def of(self, *requirements: str) -> list[Finding]:
        return [f for f in self.findings if f.requirement in requirements]

    def summary(self, limit: int = 10) -> str:
        lines = [f"{len(self.findings)} finding(s); duplicates by cause: {dict(self.duplicates)}; "
                 f"stats: {dict(self.stats)}"]
        for f in self.findings[:limit]:
            lines.append(f"  {f}")
        if len(self.findings) > limit:
            lines.append(f"  ... {len(self.findings) - limit} more")
        return "\n".join(lines)


def _detail(row: dict[str, Any]) -> dict[str, Any]:
    raw = row.get("detail")
    if not raw:
        return {}
    return raw if isinstance(raw, dict) else json.loads(raw)


def _client(row: dict[str, Any]) -> str | None:
    source = row["source"]
    return source[7:] if source.startswith("client:") else None


def _is_system_topic(topic: str) -> bool:
    return topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX)) or topic == SCHEDULE_TOPIC


@dataclass
class _Group:
    name: str
    model: str = "CLUSTERING"
    subscriptions: dict[str, SubscriptionData] = field(default_factory=dict)
    clients: set[str] = field(default_factory=set)

    @property
    def clustering(self) -> bool:
        return self.model == "CLUSTERING"


class TraceIndex:
    """The rows, sorted, with what every check needs looked up once."""

    def __init__(self, rows: Iterable[dict[str, Any]]) -> None:
        self.rows = sorted(rows, key=lambda r: r["ts"])
        self.groups: dict[str, _Group] = {}
        self.sends: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
        self.retention: dict[tuple[str, int], list[tuple[int, int]]] = defaultdict(list)
        #: (group, topic, queue id) -> COMMIT rows (the clients' and the broker's), in order.
        self.commits: dict[tuple[str, str, int], list[dict[str, Any]]] = defaultdict(list)
        self.horizon = self.rows[-1]["ts"] if self.rows else 0
        #: (event, client id) of the events a client recorded itself: for those, its own rows are its view and
        #: the broker's rows about it are left out (the auditor's client view, ``TraceFrames.in_view``).
        self.self_recorded: set[tuple[str, str]] = set()
        for row in self.rows:
            event = row["event"]
            own = _client(row)
            if own is not None:
                self.self_recorded.add((event, own))
            if event == "COMMIT":
                self.commits[(row.get("group", ""), row["topic"], row["queue_id"])].append(row)
            if event == "SUBSCRIBE" and _client(row) is not None:
                group = self.groups.setdefault(row["group"], _Group(row["group"]))
                group.model = row["model"]
                group.clients.add(row["client_id"])
                if not _is_system_topic(row["topic"]):
                    group.subscriptions[row["topic"]] = SubscriptionData.parse(row["topic"], row["expression"])
            elif event == "SEND":
                self.sends[(row["topic"], row["queue_id"])].append(row)
            elif event == "RETENTION":
                self.retention[(row["topic"], row["queue_id"])].append((row["ts"], row["min_offset"]))

    def client_view(self, row: dict[str, Any]) -> str | None:
        """The client a row speaks for in the client view: a client's own row; a broker's row about a client
        (its ``client_id``) when that client recorded none of the row's event itself."""
        own = _client(row)
        if own is not None:
            return own
        client = row.get("client_id")
        if client and (row["event"], client) not in self.self_recorded:
            return str(client)
        return None

    def expected_sends(self, group: _Group) -> dict[tuple[str, int], list[dict[str, Any]]]:
        out: dict[tuple[str, int], list[dict[str, Any]]] = {}
        for (topic, queue_id), sends in self.sends.items():
            sub = group.subscriptions.get(topic)
            if sub is None:
                continue
            out[(topic, queue_id)] = (
                sends if sub.subscribes_all else [s for s in sends if sub.matches_tag(s.get("tags") or None)]
            )
        return out

    def min_offset_at(self, queue: tuple[str, int], ts: int) -> int:
        """The queue's min offset as recorded by RETENTION rows at or before ``ts``."""
        best = 0
        for when, min_offset in self.retention.get(queue, ()):
            if when > ts:
                break
            best = max(best, min_offset)
        return best

    def retention_after(self, ts: int, until: int | None) -> bool:
        """A RETENTION of a schedule or retry queue in (ts, until]: a handed-over copy may be gone."""
        for (topic, _q), events in self.retention.items():
            copies_there = topic == SCHEDULE_TOPIC or topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
            if copies_there and any(ts < when and (until is None or when <= until) for when, _m in events):
                return True
        return False


# -- drop semantics ----------------------------------------------------------------------------------
#: Events at the same instant are taken in this order, so that a tie never makes a finding (as the auditor).
_DROP_ORDER = {"ASSIGN": 0, "PULL_REQ": 1, "COMMIT": 1, "REVOKE": 2, "CRASH": 3}


def check_drop_semantics(index: TraceIndex) -> list[Finding]:
    """REBAL-4 and REBAL-5: nothing is pulled or committed by a client for a queue it revoked.

    Each client's requests, commits and ownership changes are read in the client view
    (:meth:`TraceIndex.client_view`): a broker receives a pull its client sent before the REVOKE only after
    it, so the client's own rows decide when it recorded any. Less than DROP_GRACE_MS after the REVOKE, a
    commit is the drop's hand-over of the queue's progress (seed 001 §4) and a pull only the broker saw may have been
    sent before the drop: neither is a finding."""
    findings = []
    revoked: dict[tuple[str, str, str, str | None, int], dict[str, Any]] = {}
    steps = []
    for row in index.rows:
        event = row["event"]
        if event == "CRASH":
            client = _client(row)
        elif event in ("ASSIGN", "REVOKE", "PULL_REQ", "COMMIT"):
            client = index.client_view(row)
        else:
            continue
        if client is not None:
            steps.append((row["ts"], _DROP_ORDER[event], client, row))
    steps.sort(key=lambda s: (s[0], s[1]))
    for _, _, client, row in steps:
        event = row["event"]
        if event == "CRASH":
            for key in [k for k in revoked if k[0] == client]:
                del revoked[key]
            continue
        key = (client, row.get("group") or "", row["topic"], row.get("broker"), row["queue_id"])
        if event == "ASSIGN":
            revoked.pop(key, None)
        elif event == "REVOKE":
            revoked[key] = row
        elif key in revoked and row["ts"] - revoked[key]["ts"] < DROP_GRACE_MS * 1000 and (
                event == "COMMIT" or str(row.get("source", "")).startswith("broker:")):
            continue  # the drop's own persist (seed 001 §4), or a pull the broker got that was sent before the drop
        elif key in revoked:
            requirement = PULL_AFTER_DROP if event == "PULL_REQ" else COMMIT_AFTER_DROP
            kind = "pull after drop" if event == "PULL_REQ" else "commit after drop"
            findings.append(Finding(
                kind, requirement,
                f"{client} sent {event} for {row['topic']}/{row['queue_id']} at offset {row['offset']} after "
                f"revoking it (epoch {revoked[key].get('epoch')}) and before assigning it again",
                (revoked[key], row), (row["topic"], row["queue_id"]), client_id=client,
            ))
    return findings


def check_start_offsets(index: TraceIndex) -> list[Finding]:
    """REBAL-6: a newly assigned queue starts at the committed offset (the broker's, clustering; the
    consumer's own persisted one, broadcasting)."""
    findings = []
    commits: dict[tuple[str, str, str, int], list[tuple[int, int]]] = defaultdict(list)
    broker_crashes: list[int] = []
    for row in index.rows:
        event = row["event"]
        client = _client(row)
        if event == "CRASH" and row["source"].startswith("broker:") and not _detail(row).get("clean"):
            broker_crashes.append(row["ts"])  # a clean stop persisted the offsets first
        elif event == "COMMIT":
            group = index.groups.get(row.get("group", ""))
            if group is None:
                continue
            if group.clustering and client is None:
                commits[(group.name, "", row["topic"], row["queue_id"])].append((row["ts"], row["offset"]))
            elif not group.clustering and client is not None:
                commits[(group.name, client, row["topic"], row["queue_id"])].append((row["ts"], row["offset"]))
        elif event == "ASSIGN" and client is not None:
            group = index.groups.get(row["group"])
            if group is None:
                continue
            scope = "" if group.clustering else client
            history = commits.get((group.name, scope, row["topic"], row["queue_id"]))
            if not history:
                continue
            ts = row["ts"]
            before = [offset for when, offset in history if when < ts]
            allowed = {offset for when, offset in history if when == ts}
            if before:
                allowed.add(before[-1])
            lenient = group.clustering and any(history[0][0] <= crash <= ts for crash in broker_crashes)
            ok = row["offset"] <= max(o for _w, o in history) if lenient else row["offset"] in allowed
            if not ok:
                findings.append(Finding(
                    "start not committed", START_NOT_COMMITTED,
                    f"{client} started {row['topic']}/{row['queue_id']} at {row['offset']} but the committed "
                    f"offset was {sorted(allowed)}", (row,), (row["topic"], row["queue_id"]),
                ))
    return findings


# -- consumption outcomes ----------------------------------------------------------------------------
@dataclass
class _Outcomes:
    """Per scope (group, or group and client in broadcasting) and message id."""

    #: msg id -> ts it was settled from its original queue (consumed OK or handed over).
    settled: dict[str, int] = field(default_factory=dict)
    #: msg id -> ts of its first OK consumption from any queue, or its dead-lettering / discard.
    done: dict[str, int] = field(default_factory=dict)
    #: msg id -> ts of hand-overs to %RETRY% (for the retention excuse).
    handed_over: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    #: retry copy (retry topic, queue id, offset) -> (msg id, ts delivered, ts settled or None).
    retry_copies: dict[tuple[str, int, int], list[Any]] = field(default_factory=dict)


def _outcomes(index: TraceIndex) -> dict[tuple[str, str], _Outcomes]:
    out: dict[tuple[str, str], _Outcomes] = defaultdict(_Outcomes)
    for row in index.rows:
        event = row["event"]
        if event not in ("CONSUME", "DELIVER"):
            continue
        group = index.groups.get(row["group"])
        if group is None:
            continue
        scope = (group.name, "" if group.clustering else row["client_id"])
        detail = _detail(row)
        outcome = out[scope]
        msg_id = row["msg_id"]
        copy = _stored_copy(row) if "retry_topic" in detail else None
        if event == "DELIVER":
            if copy is not None and copy not in outcome.retry_copies:
                outcome.retry_copies[copy] = [msg_id, row["ts"], None]
            continue
        status, ts = row["status"], row["ts"]
        ok = status == "OK"
        handed = (not ok and not detail.get("dropped")
                  and (("retry" in detail and detail["retry"] != "local") or "dead_letter" in detail
                       or "discarded" in detail))
        if ok or handed:
            if copy is None:
                outcome.settled.setdefault(msg_id, ts)
            elif copy in outcome.retry_copies and outcome.retry_copies[copy][2] is None:
                outcome.retry_copies[copy][2] = ts
        if ok or "dead_letter" in detail or "discarded" in detail:
            outcome.done.setdefault(msg_id, ts)
        if handed and "retry" in detail:
            outcome.handed_over[msg_id].append(ts)
    return out


def _start_offsets(index: TraceIndex) -> dict[tuple[str, str, str, int], int]:
    """(group, scope, topic, queue id) -> the offset of its first ASSIGN."""
    starts: dict[tuple[str, str, str, int], int] = {}
    for row in index.rows:
        if row["event"] == "ASSIGN" and _client(row) is not None:
            group = index.groups.get(row["group"])
            if group is not None:
                scope = "" if group.clustering else row["client_id"]
                starts.setdefault((group.name, scope, row["topic"], row["queue_id"]), row["offset"])
    return starts


def check_commit_safety(index: TraceIndex) -> list[Finding]:
    """CONSUME-2: a COMMIT of offset o never passes an expected message, not expired, that the group
    had not settled by then. Checked for the client's COMMITs and the broker's accepted ones."""
    outcomes = _outcomes(index)
    starts = _start_offsets(index)
    findings = []
    for group in index.groups.values():
        expected = index.expected_sends(group)
        scopes = [""] if group.clustering else sorted(group.clients)
        for scope in scopes:
            outcome = outcomes.get((group.name, scope), _Outcomes())
            for queue, sends in expected.items():
                start = starts.get((group.name, scope, *queue))
                if start is None:
                    continue
                # (ts settled or inf, offset, msg id) of expected messages, swept against commits in ts order.
                msgs = sorted((s["offset"], s["msg_id"], s["ts"]) for s in sends if s["offset"] >= start)
                findings += _sweep_commits(index, group, scope, queue, msgs, outcome.settled)
            findings += _retry_commit_safety(index, group, scope, outcome)
    return findings


def _commits_of(index: TraceIndex, group: str, scope: str, queue: tuple[str, int]) -> list[dict[str, Any]]:
    """The COMMITs of ``queue`` by ``group``: all of them (clustering), or one consumer's (broadcasting)."""
    rows = index.commits.get((group, *queue), [])
    return [r for r in rows if _client(r) == scope] if scope else rows


def _sweep_commits(
    index: TraceIndex, group: _Group, scope: str, queue: tuple[str, int], msgs: list[tuple[int, str, int]],
    settled: dict[str, int],
) -> list[Finding]:
    findings = []
    # Events: settle times. For each commit at ts, the smallest offset not settled by ts (and not
    # expired by ts) must be >= the committed offset.
    unsettled = [(offset, msg_id) for offset, msg_id, _sent in msgs]
    heapq.heapify(unsettled)
    settle_events = sorted((settled[m], o, m) for o, m, _s in msgs if m in settled)
    sent_at = {m: sent for _o, m, sent in msgs}
    done: set[str] = set()
    i = 0
    for commit in _commits_of(index, group.name, scope, queue):
        ts = commit["ts"]
        while i < len(settle_events) and settle_events[i][0] <= ts:
            done.add(settle_events[i][2])
            i += 1
        floor = index.min_offset_at(queue, ts)
        while unsettled and (unsettled[0][1] in done or unsettled[0][0] < floor):
            heapq.heappop(unsettled)
        if unsettled and unsettled[0][0] < commit["offset"] and sent_at[unsettled[0][1]] <= ts:
            offset, msg_id = unsettled[0]
            findings.append(Finding(
                "unsafe commit", UNSAFE_COMMIT,
                f"COMMIT of {queue[0]}/{queue[1]} -> {commit['offset']} ({commit['source']}) while message {msg_id} "
                f"at offset {offset} was not yet consumed by {group.name}{' / ' + scope if scope else ''}",
                (commit,), queue, msg_id,
            ))
    return findings


def _retry_commit_safety(index: TraceIndex, group: _Group, scope: str, outcome: _Outcomes) -> list[Finding]:
    """Commit safety on retry queues, for the copies known from their DELIVER rows."""
    findings = []
    by_queue: dict[tuple[str, int], list[tuple[int, str, int, int | None]]] = defaultdict(list)
    for (topic, queue_id, offset), (msg_id, delivered, settled) in outcome.retry_copies.items():
        by_queue[(topic, queue_id)].append((offset, msg_id, delivered, settled))
    for queue, copies in by_queue.items():
        for commit in _commits_of(index, group.name, scope, queue):
            ts = commit["ts"]
            for offset, msg_id, delivered, settled in copies:
                if (offset < commit["offset"] and delivered <= ts and (settled is None or settled > ts)
                        and offset >= index.min_offset_at(queue, ts)):
                    findings.append(Finding(
                        "unsafe commit", UNSAFE_COMMIT,
                        f"COMMIT of {queue[0]}/{queue[1]} -> {commit['offset']} while the retry copy of {msg_id} "
                        f"at offset {offset} was not yet consumed", (commit,), queue, msg_id,
                    ))
                    break
    return findings


def _live_clients(index: TraceIndex, group: _Group) -> set[str]:
    live: set[str] = set()
    for row in index.rows:
        client = _client(row)
        if client is None or client not in group.clients:
            continue
        if row["event"] == "SUBSCRIBE":
            live.add(client)
        elif row["event"] in ("CRASH", "UNSUBSCRIBE"):
            live.discard(client)
    return live


def _downtimes(index: TraceIndex) -> dict[str, list[tuple[int, int]]]:
    """Per client, the [down, back) windows between a CRASH or UNSUBSCRIBE and its next SUBSCRIBE."""
    down_since: dict[str, int] = {}
    windows: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for row in index.rows:
        client = _client(row)
        if client is None:
            continue
        if row["event"] in ("CRASH", "UNSUBSCRIBE"):
            down_since.setdefault(client, row["ts"])
        elif row["event"] == "SUBSCRIBE" and client in down_since:
            windows[client].append((down_since.pop(client), row["ts"]))
    return windows


def check_at_least_once(index: TraceIndex, pending_ms: int = 0) -> list[Finding]:
    """ALO-1 / ALO-2: at the end, every expected message is done (or expired); messages sent within
    ``pending_ms`` of the horizon are pending, not lost. ALO-4: broadcasting, a lost message that was sent while
    the consumer was down, before it came back."""
    outcomes = _outcomes(index)
    starts = _start_offsets(index)
    downtimes = _downtimes(index)
    findings = []
    cutoff = index.horizon - pending_ms * 1000
    for group in index.groups.values():
        expected = index.expected_sends(group)
        if group.clustering:
            scopes, requirement = [""], LOST_CLUSTERING
        else:
            scopes, requirement = sorted(_live_clients(index, group)), LOST_BROADCASTING
        for scope in scopes:
            outcome = outcomes.get((group.name, scope), _Outcomes())
            for queue, sends in expected.items():
                start = starts.get((group.name, scope, *queue))
                for send in sends:
                    msg_id = send["msg_id"]
                    if msg_id in outcome.done or send["ts"] > cutoff:
                        continue
                    if start is not None and send["offset"] < start:
                        continue
                    settled = outcome.settled.get(msg_id)
                    if send["offset"] < index.min_offset_at(queue, settled if settled is not None else index.horizon):
                        continue  # expired before it was consumed
                    handovers = outcome.handed_over.get(msg_id)
                    if handovers and index.retention_after(handovers[0], None):
                        continue  # its retry copy may have been deleted by retention
                    who = f"{group.name}{' / ' + scope if scope else ''}"
                    while_down = any(down <= send["ts"] < back for down, back in downtimes.get(scope, ()))
                    findings.append(Finding(
                        "lost", LOST_BROADCASTING_WHILE_DOWN if scope and while_down else requirement,
                        f"message {msg_id} ({queue[0]}/{queue[1]} @{send['offset']}) was never consumed OK by {who}"
                        + ("" if start is not None else " (its queue was never assigned)"),
                        (send,), queue, msg_id,
                    ))
    return findings


def count_duplicates(index: TraceIndex) -> tuple[Counter[str], list[Finding]]:
    """ALO-3: every OK consumption after the first of the same message (per group; per consumer in
    broadcasting) is attributed to a cause seen between the two deliveries; ``unknown`` is a finding."""
    causes: Counter[str] = Counter()
    findings = []
    last_deliver: dict[tuple[str, str, tuple[str, int, int]], dict[str, Any]] = {}
    oks: dict[tuple[str, str, str], list[tuple[dict[str, Any], dict[str, Any]]]] = defaultdict(list)
    failed_before: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    crashes: list[tuple[int, str]] = []
    broker_events: list[int] = []
    handovers: dict[tuple[str, int], list[tuple[int, str, str]]] = defaultdict(list)
    for row in index.rows:
        event = row["event"]
        client = _client(row)
        if event == "CRASH":
            if client is None:
                broker_events.append(row["ts"])
            else:
                crashes.append((row["ts"], client))
        elif event == "RESTART" and client is None:
            broker_events.append(row["ts"])
        elif event in ("REVOKE", "ASSIGN") and client is not None:
            reason = _detail(row).get("reason", "") if event == "REVOKE" else "assign"
            handovers[(row["topic"], row["queue_id"])].append((row["ts"], client, reason))
        elif event == "DELIVER":
            last_deliver[(row["client_id"], row["msg_id"], _stored_copy(row))] = row
        elif event == "CONSUME":
            group = index.groups.get(row["group"])
            if group is None:
                continue
            scope = (group.name, "" if group.clustering else row["client_id"], row["msg_id"])
            if row["status"] == "OK":
                deliver = last_deliver.get((row["client_id"], row["msg_id"], _stored_copy(row)), row)
                oks[scope].append((deliver, row))
            else:
                failed_before[scope].append(row["ts"])
    for scope, consumptions in oks.items():
        for (prev, _prev_ok), (deliver, ok) in zip(consumptions, consumptions[1:], strict=False):
            cause = _cause(prev, deliver, failed_before.get(scope, ()), crashes, broker_events, handovers)
            causes[cause] += 1
            if cause == "unknown":
                findings.append(Finding(
                    "duplicate without cause", DUPLICATE_WITHOUT_CAUSE,
                    f"{scope[2]} consumed OK again by {ok['client_id']} with no retry, crash, broker restart or "
                    f"revoke of its queue since its earlier delivery to {prev['client_id']}",
                    (prev, deliver, ok), (prev["topic"], prev["queue_id"]), scope[2],
                ))
    return causes, findings


def _stored_copy(deliver: dict[str, Any]) -> tuple[str, int, int]:
    """Which stored copy a delivery came from: the original (topic, queue, offset) or its retry copy."""
    detail = _detail(deliver)
    if "retry_topic" in detail:
        return detail["retry_topic"], detail["retry_queue_id"], detail["retry_offset"]
    return deliver["topic"], deliver["queue_id"], deliver["offset"]


def _cause(
    prev: dict[str, Any], deliver: dict[str, Any], failures: Iterable[int], crashes: list[tuple[int, str]],
    broker_events: list[int], handovers: dict[tuple[str, int], list[tuple[int, str, str]]],
) -> str:
    """Why ``deliver`` repeats the OK consumption delivered by ``prev`` (see CAUSES).

    Two different consumers delivering the same stored copy means the queue changed hands between
    them: a rebalance (its REVOKE may even come after the new owner's first delivery, the old owner
    hearing of the change later), refined to ``shutdown`` or ``offset_moved`` by the old owner's
    REVOKE reason. The same consumer delivering it twice needs its own REVOKE or ASSIGN of the
    queue in between (pull-expired, offset moved, given away and back)."""
    # The deliveries may overlap in time (a dropped queue's in-flight result finishing after the new
    # owner's), so the window is between them in either order.
    start, end = min(prev["ts"], deliver["ts"]), max(prev["ts"], deliver["ts"])
    prev_copy = _stored_copy(prev)
    if _stored_copy(deliver) != prev_copy:
        return "retry"  # two stored copies: only a send-back makes one
    first = prev["client_id"]
    if any(start <= ts <= end and who == first for ts, who in crashes):
        return "crash"  # the first consumer died before its commit reached the broker
    if any(start <= ts <= end for ts in broker_events):
        return "broker_restart"
    reasons = {reason for ts, who, reason in handovers.get(prev_copy[:2], ())
               if start < ts <= end and who == first}
    for reason in ("shutdown", "offset_moved"):
        if reason in reasons:
            return reason
    if reasons or deliver["client_id"] != first:
        return "rebalance"
    if any(start < ts <= end for ts in failures):
        return "retry"
    return "unknown"


def check_ownership_at_end(index: TraceIndex) -> list[Finding]:
    """REBAL-2 / REBAL-3: at the end of a settled run, clustering: each assigned-at-some-point queue
    has exactly one live owner; broadcasting: every live consumer owns every such queue."""
    findings = []
    for group in index.groups.values():
        live = _live_clients(index, group)
        if not live:
            continue
        owners: dict[tuple[str, int], set[str]] = defaultdict(set)
        for row in index.rows:
            client = _client(row)
            if client is None or (row.get("group") != group.name and row["event"] != "CRASH"):
                continue
            if row["event"] == "ASSIGN":
                owners[(row["topic"], row["queue_id"])].add(client)
            elif row["event"] == "REVOKE":
                owners[(row["topic"], row["queue_id"])].discard(client)
            elif row["event"] in ("CRASH", "UNSUBSCRIBE"):
                for holders in owners.values():
                    holders.discard(client)
        for queue in index.sends:
            if queue[0] in group.subscriptions:
                owners.setdefault(queue, set())
        for queue, holders in sorted(owners.items()):
            holders &= live
            if group.clustering and len(holders) != 1:
                findings.append(Finding(
                    "ownership", OWNERSHIP_CLUSTERING,
                    f"at the end {queue[0]}/{queue[1]} has {len(holders)} owners {sorted(holders)} among {len(live)} "
                    "live consumers", (), queue,
                ))
            elif not group.clustering and holders != live:
                findings.append(Finding(
                    "ownership", OWNERSHIP_BROADCASTING,
                    f"at the end {queue[0]}/{queue[1]} is not owned by {sorted(live - holders)}", (), queue,
                ))
    return findings


#: Every check, by name (``check_trace(rows, only=...)``).
CHECKS = ("drop", "start", "commit_safety", "at_least_once", "duplicates", "ownership")


def check_trace(rows: Iterable[dict[str, Any]], only: Iterable[str] = CHECKS, pending_ms: int = 0) -> CheckReport:
    index = TraceIndex(rows)
    wanted = set(only)
    report = CheckReport()
    if "drop" in wanted:
        report.findings += check_drop_semantics(index)
    if "start" in wanted:
        report.findings += check_start_offsets(index)
    if "commit_safety" in wanted:
        report.findings += check_commit_safety(index)
    if "at_least_once" in wanted:
        report.findings += check_at_least_once(index, pending_ms)
    if "duplicates" in wanted:
        report.duplicates, found = count_duplicates(index)
        report.findings += found
    if "ownership" in wanted:
        report.findings += check_ownership_at_end(index)
    report.stats["rows"] = len(index.rows)
    report.stats["sent"] = sum(len(s) for s in index.sends.values())
    report.stats["consumed_ok"] = sum(1 for r in index.rows if r["event"] == "CONSUME" and r["status"] == "OK")
    return report
