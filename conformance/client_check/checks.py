"""One checker per client requirement, judged from the broker's trace rows of one scenario run.

The broker sees a client only through its requests, so each checker states the observable part of a seed
rule (the requirement sentences in conformance/spec/requirements.toml, family CCLIENT). Rows are the
broker's own (one source), so their ``seq`` orders them exactly. A checker returns :class:`Finding`:
``pass``, ``fail`` (with the first violations) or ``not-applicable`` when the run gave no evidence either way
(for instance the client never got a PULL_OFFSET_MOVED), so an idle client never passes by default.
"""

from __future__ import annotations

import bisect
import itertools
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from conformance.client_check.scenarios import REBALANCE_INTERVAL_S, REBALANCE_SLACK_S, RESUME_WITHIN_S

#: Seed 001 (DefaultMQPushConsumer): pullThresholdForQueue. A push consumer pulls no more for a queue
#: whose ProcessQueue caches more than this many messages.
PULL_THRESHOLD_FOR_QUEUE = 1000
#: Seed 001: pullBatchSize. The flow-control tolerance is one batch above the threshold: the client checks
#: the cached count *before* a pull, so a pull sent at exactly the threshold may add one more batch.
PULL_BATCH_SIZE = 32
#: How soon after PULL_NOT_FOUND the next pull of the queue must come. CLIENT-9 (upstream): "pull again at
#: once"; the tolerance covers process scheduling of a client under test on a loaded machine.
REPULL_WITHIN_S = 5.0
#: Most violations quoted in a failure message.
MAX_QUOTED = 5


def consume_spread(cores: int | None = None) -> int:
    """How many messages a correct client may have consumed *above* its consume offset (its lowest unconsumed
    message) when it pulls: one batch per consume thread beyond the first, since the offset waits for the slowest
    thread. RocketMQ's C++ client hands each pulled batch (32) to one of as many threads as the machine has cores
    (its interop test, two cores, saw ``o - c`` = 1 056 in two runs of three: 1 000 cached and the other thread's
    batch consumed above ``c``); the Java and Go push consumers hand one message to each of 20 threads (at most 19
    above), so the allowance is never below one batch. The client runs on this machine (loopback): its cores are
    ours."""
    cores = cores if cores is not None else os.cpu_count() or 1
    return PULL_BATCH_SIZE * max(1, cores - 1)


#: How a subject reports a message its listener finished: this prefix and a JSON object with ``ts`` (µs, wall
#: clock), ``topic``, ``queue_id`` and ``offset`` (docs/client-conformance.md, "Consumption reports").
CONSUME_REPORT_PREFIX = "mqtck-consume "


@dataclass(frozen=True)
class ConsumeReport:
    """One message the client under test said its listener finished, and when (µs, the trace's clock)."""

    ts_us: int
    topic: str
    queue_id: int
    offset: int


def consume_reports(lines: Iterator[str] | list[str]) -> tuple[ConsumeReport, ...] | None:
    """The consumption reports among a subject's output lines; None if there are none (the subject does not report).
    A line that starts like one but does not parse is an error: a report silently dropped would make the client look
    as if it held more than it did."""
    reports = []
    for number, line in enumerate(lines, 1):
        if not line.startswith(CONSUME_REPORT_PREFIX):
            continue
        try:
            fields = json.loads(line.removeprefix(CONSUME_REPORT_PREFIX))
            reports.append(ConsumeReport(int(fields["ts"]), str(fields["topic"]), int(fields["queue_id"]),
                                         int(fields["offset"])))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"line {number}: not a consumption report ({exc}): {line.strip()[:200]}") from None
    return tuple(reports) if reports else None


@dataclass
class Context:
    """What a checker needs to know about the scenario besides the rows."""

    group: str
    topic: str
    #: Client ids of the client under test (from its SUBSCRIBE rows).
    subject_ids: frozenset[str]
    #: The last row ``seq`` before the harness asked the client to stop, and that row's time (µs).
    end_ts_us: int
    #: Offsets the harness committed before the client started: (topic, queue) -> offset.
    preset_offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    #: Rebalance scenario: when the harness's extra member joined (µs) and the queues it took from the client.
    join_ts_us: int | None = None
    revoked: frozenset[tuple[str, int]] = frozenset()
    rebalance_grace_s: float = REBALANCE_INTERVAL_S + REBALANCE_SLACK_S
    repull_within_s: float = REPULL_WITHIN_S
    pull_threshold: int = PULL_THRESHOLD_FOR_QUEUE
    #: CCLIENT-5's allowance for concurrent consumption (:func:`consume_spread`).
    consume_spread: int = field(default_factory=consume_spread)
    #: What the client reported consuming (``mqtck-consume`` lines of its log: :func:`consume_reports`), or None
    #: if it reports nothing. CCLIENT-5 then judges its cache, not the consume offset (:func:`flow_control_threshold`).
    consumed: tuple[ConsumeReport, ...] | None = None
    #: Consumer-killed scenario: when the client was killed and started again (µs).
    restarted_ts_us: int | None = None
    #: Broker-restarted scenario: when the broker was back (µs), and how long the client may take to pull again.
    broker_back_ts_us: int | None = None
    resume_within_s: float = RESUME_WITHIN_S


@dataclass
class Finding:
    status: str  # "pass", "fail" or "not-applicable"
    message: str
    observations: dict[str, Any] = field(default_factory=dict)


def answer_code(row: dict[str, Any]) -> str:
    """The remoting code of a PULL_RESP row (its detail's ``code``: PULL_NOT_FOUND, PULL_OFFSET_MOVED ...), or ""."""
    detail = row.get("detail")
    if isinstance(detail, str):
        try:
            detail = json.loads(detail)
        except ValueError:
            detail = None
    return str((detail or {}).get("code", ""))


def _mine(rows: list[dict[str, Any]], ctx: Context, event: str) -> list[dict[str, Any]]:
    return [r for r in rows if r["event"] == event and r.get("group") == ctx.group
            and r.get("client_id") in ctx.subject_ids]


def _queue(row: dict[str, Any]) -> tuple[str, int]:
    return str(row.get("topic")), int(row.get("queue_id", -1))


def _group_rows(rows: list[dict[str, Any]], ctx: Context) -> Iterator[tuple[dict[str, Any], tuple[str, int]]]:
    """The rows of the scenario's group in the broker's order, each with its queue."""
    for row in sorted(rows, key=lambda r: r["seq"]):
        if row.get("group") == ctx.group:
            yield row, _queue(row)


def _verdict(violations: list[str], evidence: int, what: str, none_reason: str,
             observations: dict[str, Any] | None = None) -> Finding:
    if violations:
        quoted = "; ".join(violations[:MAX_QUOTED])
        more = f" (and {len(violations) - MAX_QUOTED} more)" if len(violations) > MAX_QUOTED else ""
        return Finding("fail", f"{len(violations)} violation(s) in {evidence} {what}: {quoted}{more}",
                       observations or {})
    if evidence == 0:
        return Finding("not-applicable", none_reason, observations or {})
    return Finding("pass", f"{evidence} {what} checked", observations or {})


def next_offset_after_moved(rows: list[dict[str, Any]], ctx: Context) -> Finding:
    """CCLIENT-1: the first pull of a queue after PULL_OFFSET_MOVED asks for the nextBeginOffset it was given."""
    violations, evidence = [], 0
    moved: dict[tuple[str, int], dict[str, Any]] = {}
    for row in sorted(rows, key=lambda r: r["seq"]):
        if row.get("group") != ctx.group or row.get("client_id") not in ctx.subject_ids:
            continue
        q = _queue(row)
        if row["event"] == "PULL_RESP" and answer_code(row) == "PULL_OFFSET_MOVED":
            moved[q] = row
        elif row["event"] == "PULL_REQ" and q in moved:
            resp = moved.pop(q)
            evidence += 1
            if row["offset"] != resp["next_offset"]:
                violations.append(f"{q[0]}:{q[1]} moved from {resp['offset']} to {resp['next_offset']}, "
                                  f"next pull at {row['offset']}")
    return _verdict(violations, evidence, "pulls after PULL_OFFSET_MOVED",
                    "the client never pulled a queue again after a PULL_OFFSET_MOVED")


def repull_after_not_found(rows: list[dict[str, Any]], ctx: Context) -> Finding:
    """CCLIENT-2: after PULL_NOT_FOUND the client pulls the queue again soon, from the nextBeginOffset given."""
    ordered = sorted(rows, key=lambda r: r["seq"])
    window_us = int(ctx.repull_within_s * 1_000_000)
    violations, evidence = [], 0
    for i, resp in enumerate(ordered):
        if resp["event"] != "PULL_RESP" or answer_code(resp) != "PULL_NOT_FOUND" or resp.get("group") != ctx.group:
            continue
        if resp.get("client_id") not in ctx.subject_ids or resp["ts"] + window_us > ctx.end_ts_us:
            continue
        q = _queue(resp)
        if q in ctx.revoked and ctx.join_ts_us is not None and resp["ts"] >= ctx.join_ts_us:
            continue
        evidence += 1
        nxt = next((r for r in ordered[i + 1:] if r["event"] == "PULL_REQ" and r.get("client_id") == resp["client_id"]
                    and _queue(r) == q), None)
        if nxt is None or nxt["ts"] - resp["ts"] > window_us:
            violations.append(f"{q[0]}:{q[1]} not pulled within {ctx.repull_within_s} s of PULL_NOT_FOUND at "
                              f"offset {resp['offset']}")
        elif nxt["offset"] != resp["next_offset"]:
            violations.append(f"{q[0]}:{q[1]} PULL_NOT_FOUND gave {resp['next_offset']}, next pull at {nxt['offset']}")
    return _verdict(violations, evidence, "PULL_NOT_FOUND answers",
                    "the client never got a PULL_NOT_FOUND early enough in the run to judge its next pull")


def commits_within_delivered(rows: list[dict[str, Any]], ctx: Context) -> Finding:
    """CCLIENT-3: no commit passes the highest offset the broker handed the group for that queue.

    The bound per queue starts at the offset the harness preset and rises with every answer's nextBeginOffset
    (messages delivered, or an offset the broker named). A PULL_OFFSET_MOVED does not lower it: committing again
    an offset the client was given is no unsafe commit (CCLIENT-6 judges that).
    """
    bound: dict[tuple[str, int], int] = dict(ctx.preset_offsets)
    violations, evidence = [], 0
    for row, q in _group_rows(rows, ctx):
        if row["event"] == "PULL_RESP":
            bound[q] = max(bound.get(q, 0), row["next_offset"])
        elif row["event"] == "COMMIT" and row.get("client_id") in ctx.subject_ids:
            evidence += 1
            if row["offset"] > bound.get(q, 0):
                violations.append(f"{q[0]}:{q[1]} committed {row['offset']} but was handed only up to "
                                  f"{bound.get(q, 0)}")
    return _verdict(violations, evidence, "commits", "the client committed no offset")


def no_commit_of_the_moved_offset(rows: list[dict[str, Any]], ctx: Context) -> Finding:
    """CCLIENT-6: after PULL_OFFSET_MOVED, no commit of that queue passes the answer's nextBeginOffset until a
    later answer hands the group more (the offset the broker declared invalid is not committed again)."""
    bound: dict[tuple[str, int], int] = {}
    violations, evidence = [], 0
    for row, q in _group_rows(rows, ctx):
        if row["event"] == "PULL_RESP":
            if answer_code(row) == "PULL_OFFSET_MOVED":
                bound[q] = row["next_offset"]
            elif q in bound:
                bound[q] = max(bound[q], row["next_offset"])
        elif row["event"] == "COMMIT" and row.get("client_id") in ctx.subject_ids and q in bound:
            evidence += 1
            if row["offset"] > bound[q]:
                violations.append(f"{q[0]}:{q[1]} committed {row['offset']} after PULL_OFFSET_MOVED to {bound[q]}")
    return _verdict(violations, evidence, "commits after PULL_OFFSET_MOVED",
                    "the client committed nothing of a queue after a PULL_OFFSET_MOVED")


def no_pull_of_revoked_queues(rows: list[dict[str, Any]], ctx: Context) -> Finding:
    """CCLIENT-4: once the grace after a rebalance has passed, the client sends no pull of a queue it lost."""
    if ctx.join_ts_us is None or not ctx.revoked:
        return Finding("not-applicable", "no rebalance took a queue from the client in this scenario")
    deadline = ctx.join_ts_us + int(ctx.rebalance_grace_s * 1_000_000)
    if ctx.end_ts_us <= deadline:
        return Finding("not-applicable", f"the run ended before the rebalance grace ({ctx.rebalance_grace_s} s) passed")
    pulls = _mine(rows, ctx, "PULL_REQ")
    owned_before = {_queue(r) for r in pulls if r["ts"] < ctx.join_ts_us} & ctx.revoked
    if not owned_before:
        return Finding("not-applicable", "the client pulled none of the revoked queues before the rebalance")
    late = [r for r in pulls if _queue(r) in ctx.revoked and deadline < r["ts"] <= ctx.end_ts_us]
    violations = [f"{r['topic']}:{r['queue_id']} pulled at offset {r['offset']}, "
                  f"{(r['ts'] - ctx.join_ts_us) / 1e6:.1f} s after it was revoked" for r in late]
    evidence = len(owned_before)
    revoked = sorted(f"{t}:{q}" for t, q in owned_before)
    return _verdict(violations, evidence, "revoked queues", "", {"revoked": revoked})


def flow_control_threshold(rows: list[dict[str, Any]], ctx: Context) -> Finding:
    """CCLIENT-5: a pull asks for offset o only while o - (the client's consume offset) <= threshold + one batch.

    A client that reports what its listener finished (:attr:`Context.consumed`) is judged by its cache instead
    (:func:`flow_control_by_cache`): o - c also counts what its other consume threads finished above c, which a
    starved thread holding c lets grow without bound on a loaded machine (a correct Java push consumer failed so
    in one CI run).

    The consume offset is the commit piggybacked on that pull (the broker records it right after the PULL_REQ):
    the client's offset store at the moment it decided to pull, so ``o - c`` bounds what it holds delivered but
    unconsumed. A pull without one is not judged. An earlier commit is no stand-in: a commit persisted
    periodically lags the consumption by up to its period (the Java lite-pull consumer's, every 5 s, put
    ``o - c`` at 1 300 while its cache held at most 1 000), so judging by it failed correct clients.
    """
    if ctx.consumed is not None:
        return flow_control_by_cache(rows, ctx, ctx.consumed)
    ordered = sorted(rows, key=lambda r: r["seq"])
    limit = ctx.pull_threshold + PULL_BATCH_SIZE + ctx.consume_spread
    violations, evidence, worst = [], 0, 0
    for row, after in itertools.pairwise(ordered):
        if row["event"] != "PULL_REQ" or row.get("group") != ctx.group or row.get("client_id") not in ctx.subject_ids:
            continue
        if after["event"] != "COMMIT" or _queue(after) != _queue(row) or after.get("client_id") != row["client_id"]:
            continue
        evidence += 1
        backlog = row["offset"] - after["offset"]
        worst = max(worst, backlog)
        if backlog > limit:
            violations.append(f"{row['topic']}:{row['queue_id']} pulled at {row['offset']} with consume offset "
                              f"{after['offset']} ({backlog} > {limit})")
    obs = {"max_backlog": worst, "limit": limit}
    stored = [r["offset"] for r in ordered if r["event"] == "SEND" and r.get("topic") == ctx.topic]
    if stored and max(stored) < limit:
        return Finding("not-applicable", f"the scenario's queues hold fewer messages ({max(stored) + 1}) than the "
                       f"tolerance on this machine ({limit}): no pull could exceed it", obs)
    if evidence == 0:
        return Finding("not-applicable", "the client piggybacked no commit on its pulls: its consume offset at a "
                       "pull is unknown", obs)
    if not violations and worst < ctx.pull_threshold // 2:
        return Finding("not-applicable", f"the client's backlog never reached half the threshold (max {worst}): "
                       "the scenario did not load it", obs)
    return _verdict(violations, evidence, "pulls", "", obs)


def flow_control_by_cache(rows: list[dict[str, Any]], ctx: Context,
                          consumed: tuple[ConsumeReport, ...]) -> Finding:
    """CCLIENT-5 from the client's own reports: at each pull, the client holds at least what the broker delivered
    to it on that queue before the pull (it pulls a queue again only once the last answer is in its cache) minus
    what it reported finished by then; that must stay within threshold + one batch.

    The bound is a lower one, so a failure is certain: a report's time is taken against the end of the pull row's
    millisecond (rows have ms resolution), which counts a little consumption after the pull as before it; and a
    listener reports before the client removes the message from its cache. Pulls after the last report are not
    judged (a report lost at shutdown would otherwise count as held)."""
    limit = ctx.pull_threshold + PULL_BATCH_SIZE
    done: dict[tuple[str, int], list[int]] = {}
    for report in consumed:
        done.setdefault((report.topic, report.queue_id), []).append(report.ts_us)
    for times in done.values():
        times.sort()
    last_report = max(r.ts_us for r in consumed)
    delivered: dict[tuple[str, int], int] = {}
    violations, evidence, worst = [], 0, 0
    for row in sorted(_mine(rows, ctx, "PULL_REQ") + _mine(rows, ctx, "PULL_RESP"), key=lambda r: r["seq"]):
        q = _queue(row)
        if row["event"] == "PULL_RESP":
            delivered[q] = delivered.get(q, 0) + int(row.get("count") or 0)
            continue
        if row["ts"] > last_report:
            continue
        evidence += 1
        held = delivered.get(q, 0) - bisect.bisect_left(done.get(q, []), row["ts"] + 1000)
        worst = max(worst, held)
        if held > limit:
            violations.append(f"{q[0]}:{q[1]} pulled at {row['offset']} holding at least {held} messages "
                              f"delivered and not consumed (> {limit})")
    obs = {"max_held": worst, "limit": limit, "judged_by": "the client's consumption reports"}
    if evidence and not violations and worst < ctx.pull_threshold // 2:
        return Finding("not-applicable", f"the client never held half the threshold (max {worst}): the scenario did "
                       "not load it", obs)
    return _verdict(violations, evidence, "pulls", "the client pulled nothing before its last consumption report",
                    obs)


def start_at_committed_offset(rows: list[dict[str, Any]], ctx: Context) -> Finding:
    """CCLIENT-7: when the client starts on a queue its group has a committed offset for, its first pull of that
    queue asks for no offset beyond it.

    The committed offset a client starts from is the group's as the broker held it when the client appeared
    (its first row; the broker stores the latest commit it is sent, as ConsumerOffsetManager.commitOffset does,
    or the harness's preset): a client committing its own skip before its first pull does not hide it. After the
    harness killed and restarted the client, the first pull of each queue since then is judged against the
    offsets held at the restart too (a successor that kept its predecessor's client id).
    """
    committed: dict[tuple[str, int], int] = dict(ctx.preset_offsets)
    # A client starts by registering (seed 001 §2: heartbeat, then rebalance). Pulls under a connection's key
    # (after a broker restart, before the next heartbeat) are a running client's, not a start.
    registered = {r.get("client_id") for r in rows if r["event"] == "SUBSCRIBE" and r.get("group") == ctx.group}
    at_start: dict[str, dict[tuple[str, int], int]] = {}
    at_restart: dict[tuple[str, int], int] | None = None
    seen: set[tuple[str, tuple[str, int]]] = set()
    since_restart: set[tuple[str, int]] = set()
    violations, evidence, replayed = [], 0, 0
    for row, q in _group_rows(rows, ctx):
        client = row.get("client_id")
        if client in ctx.subject_ids and client not in at_start:
            at_start[client] = dict(committed)
        if at_restart is None and ctx.restarted_ts_us is not None and row["ts"] >= ctx.restarted_ts_us:
            at_restart = dict(committed)
        if row["event"] == "COMMIT":
            committed[q] = row["offset"]
            continue
        if row["event"] != "PULL_REQ" or client not in ctx.subject_ids or client not in registered:
            continue
        starts: list[dict[tuple[str, int], int]] = []
        if (client, q) not in seen:
            seen.add((client, q))
            starts.append(at_start[client])
        if at_restart is not None and q not in since_restart:
            since_restart.add(q)
            starts.append(at_restart)
        held = min((start[q] for start in starts if q in start), default=None)
        if held is None:
            continue
        evidence += 1
        if row["offset"] > held:
            violations.append(f"{q[0]}:{q[1]} first pulled at {row['offset']} by {client}, beyond the group's "
                              f"committed offset {held}")
        else:
            replayed += held - row["offset"]
    return _verdict(violations, evidence, "first pulls of queues with a committed offset",
                    "the client never started on a queue its group had committed an offset for",
                    {"offsets_replayed": replayed})


def resume_after_broker_restart(rows: list[dict[str, Any]], ctx: Context) -> Finding:
    """CCLIENT-8: after the broker's return, the client pulls every queue it pulled before, before the run ends,
    and the first of those pulls asks for no offset beyond the highest nextBeginOffset the broker handed the group
    for that queue (it neither stalls nor skips)."""
    return _resume(rows, ctx, bounded=False)


def resume_within_bound(rows: list[dict[str, Any]], ctx: Context) -> Finding:
    """CCLIENT-9: after the broker's return, the client pulls every queue it pulled before within
    ``resume_within_s`` (split from CCLIENT-8: the bound is upstream's heartbeat interval, not a seed's)."""
    return _resume(rows, ctx, bounded=True)


def _resume(rows: list[dict[str, Any]], ctx: Context, bounded: bool) -> Finding:
    back = ctx.broker_back_ts_us
    if back is None:
        return Finding("not-applicable", "the broker did not restart in this scenario")
    window_end = back + int(ctx.resume_within_s * 1_000_000) if bounded else ctx.end_ts_us
    handed: dict[tuple[str, int], int] = dict(ctx.preset_offsets)
    before: set[tuple[str, int]] = set()
    resumed: dict[tuple[str, int], dict[str, Any]] = {}
    for row, q in _group_rows(rows, ctx):
        if q[0] != ctx.topic:
            continue  # the group's %RETRY% topic: pulled too, at the pace of its own (empty) queue
        if row["ts"] < back:
            if row["event"] == "PULL_RESP":
                handed[q] = max(handed.get(q, 0), row["next_offset"])
            elif row["event"] == "PULL_REQ" and row.get("client_id") in ctx.subject_ids:
                before.add(q)
        elif row["event"] == "PULL_REQ" and row.get("client_id") in ctx.subject_ids and q not in resumed:
            resumed[q] = row
    if bounded and ctx.end_ts_us < window_end and not before <= set(resumed):
        return Finding("not-applicable", f"the run ended before the {ctx.resume_within_s:g} s to resume in passed")
    violations = []
    for q in sorted(before):
        row = resumed.get(q)
        if row is None or row["ts"] > window_end:
            violations.append(f"{q[0]}:{q[1]} not pulled within {ctx.resume_within_s:g} s of the broker's return"
                              if bounded else f"{q[0]}:{q[1]} not pulled again after the broker's return")
        elif bounded:
            continue  # the offset is CCLIENT-8's
        elif row["offset"] > handed.get(q, 0):
            violations.append(f"{q[0]}:{q[1]} pulled at {row['offset']} after the restart, beyond the "
                              f"{handed.get(q, 0)} the broker had handed out")
    delays = [round((r["ts"] - back) / 1e6, 1) for r in resumed.values()]
    return _verdict(violations, len(before), "queues pulled before the restart",
                    "the client pulled no queue before the broker restarted",
                    {"resumed_after_s": max(delays) if delays else None})


#: Requirement id -> checker.
CHECKS: dict[str, Callable[[list[dict[str, Any]], Context], Finding]] = {
    "CCLIENT-1": next_offset_after_moved,
    "CCLIENT-2": repull_after_not_found,
    "CCLIENT-3": commits_within_delivered,
    "CCLIENT-4": no_pull_of_revoked_queues,
    "CCLIENT-5": flow_control_threshold,
    "CCLIENT-6": no_commit_of_the_moved_offset,
    "CCLIENT-7": start_at_committed_offset,
    "CCLIENT-8": resume_after_broker_restart,
    "CCLIENT-9": resume_within_bound,
}
