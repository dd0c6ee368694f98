"""One checker per POP-consumer requirement (family PCLIENT), judged from the broker's trace and the application's
own account of what it consumed.

The broker sees a v5 consumer's receives (POP rows, one per message delivered, with the receipt handle), acks (ACK)
and changes of invisible time (CHANGE_INVISIBLE, whose ``detail.new_handle`` is the handle that replaces the old
one), its heartbeats (SUBSCRIBE) and its termination notice (UNSUBSCRIBE). What it cannot see is the application's
verdict on a message: the subject prints one ``consumed`` line per delivery with the message id, the delivery
attempt and SUCCESS or FAILURE before the client acts on it. A *delivery* is one POP row: the message id and the
attempt (``reconsume_times`` + 1, v5's delivery_attempt) name it on both sides, and its *handles* are the POP's
handle and every handle a change of its invisible time returned.

A checker returns :class:`~conformance.client_check.checks.Finding`: ``pass``, ``fail`` with the first
violations, or ``not-applicable`` when the run gave no evidence either way.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from conformance.client_check.checks import Finding, _verdict

Row = dict[str, Any]


@dataclass
class PopContext:
    """What a checker needs to know about the scenario besides the rows."""

    group: str
    topic: str
    #: Client ids of the client under test (its SUBSCRIBE rows, every process of the scenario).
    subject_ids: frozenset[str]
    #: The application's ``consumed`` lines (message_id, attempt, result), every process's.
    consumed: list[dict[str, Any]] = field(default_factory=list)
    #: Client ids of processes that stopped by themselves or at SIGTERM (not killed): they should say goodbye.
    graceful_ids: frozenset[str] = frozenset()
    #: Client ids of the process the harness killed with SIGKILL.
    killed_ids: frozenset[str] = frozenset()
    #: The broker's time when the scenario's clients were all gone (µs): later deadlines cannot be judged.
    end_ts_us: int = 0
    #: The message ids the harness stored in the scenario's topic.
    sent: frozenset[str] = frozenset()


@dataclass
class Delivery:
    """One POP of one message to one client, and what the client did with it."""

    pop: Row
    handles: list[str]
    acks: list[Row] = field(default_factory=list)
    changes: list[Row] = field(default_factory=list)

    @property
    def msg_id(self) -> str:
        return str(self.pop.get("msg_id"))

    @property
    def attempt(self) -> int:
        return int(self.pop.get("reconsume_times") or 0) + 1

    @property
    def acked(self) -> bool:
        return any(a.get("status") == "OK" for a in self.acks)

    @property
    def visible_again_us(self) -> int:
        """When the message becomes visible again if this delivery is never acked: the pop's invisible time from
        the pop, or the last change's from that change (seed 004 §2.1: a change replaces the invisible time)."""
        last = self.changes[-1] if self.changes else self.pop
        return int(last["ts"]) + int(last.get("invisible_ms") or 0) * 1000


def _new_handle(row: Row) -> str:
    """A CHANGE_INVISIBLE row's new handle (its ``detail``, a JSON text in a trace row), or ""."""
    detail = row.get("detail")
    if isinstance(detail, str):
        try:
            detail = json.loads(detail)
        except ValueError:
            detail = None
    return str((detail if isinstance(detail, dict) else {}).get("new_handle") or "")


def deliveries(rows: Iterable[Row], ctx: PopContext) -> list[Delivery]:
    """Every POP of the scenario's group, in the broker's order, with the acks and changes of its handles."""
    found: list[Delivery] = []
    by_handle: dict[str, Delivery] = {}
    for row in sorted(rows, key=lambda r: r["seq"]):
        if row.get("group") != ctx.group:
            continue
        event = row["event"]
        if event == "POP":
            d = Delivery(row, [str(row.get("handle"))])
            found.append(d)
            by_handle[d.handles[0]] = d
        elif event in ("ACK", "CHANGE_INVISIBLE"):
            d_of = by_handle.get(str(row.get("handle")))
            if d_of is None:
                continue
            if event == "ACK":
                d_of.acks.append(row)
            else:
                d_of.changes.append(row)
                new = _new_handle(row)
                if new:
                    d_of.handles.append(str(new))
                    by_handle[str(new)] = d_of
    return found


def _subject_deliveries(rows: list[Row], ctx: PopContext) -> dict[tuple[str, int], Delivery]:
    """The client's deliveries by (message id, attempt): the last POP of each (a message popped twice with the same
    attempt was not consumed in between)."""
    return {(d.msg_id, d.attempt): d for d in deliveries(rows, ctx) if d.pop.get("client_id") in ctx.subject_ids}


def _verdicts(ctx: PopContext, result: str) -> list[dict[str, Any]]:
    return [c for c in ctx.consumed if c.get("result") == result]


def _name(line: dict[str, Any]) -> str:
    return f"{line.get('body', '?')} ({line.get('message_id')}, attempt {line.get('attempt')})"


def acks_what_succeeded(rows: list[Row], ctx: PopContext) -> Finding:
    """PCLIENT-1: every delivery the application consumed successfully is acknowledged, with a handle of that
    delivery, before the client is gone."""
    by_delivery = _subject_deliveries(rows, ctx)
    violations, evidence = [], 0
    for line in _verdicts(ctx, "SUCCESS"):
        d = by_delivery.get((str(line.get("message_id")), int(line.get("attempt", 0))))
        if d is None:
            continue
        evidence += 1
        if not d.acked:
            refused = [a.get("status") for a in d.acks]
            violations.append(f"{_name(line)} succeeded but was never acknowledged"
                              + (f" (acks refused: {', '.join(map(str, refused))})" if refused else ""))
    return _verdict(violations, evidence, "successful consumptions",
                    "the application consumed no message successfully that the broker saw delivered")


def no_ack_of_failures(rows: list[Row], ctx: PopContext) -> Finding:
    """PCLIENT-2: no delivery the application failed is acknowledged (the message must come back)."""
    by_delivery = _subject_deliveries(rows, ctx)
    violations, evidence = [], 0
    for line in _verdicts(ctx, "FAILURE"):
        d = by_delivery.get((str(line.get("message_id")), int(line.get("attempt", 0))))
        if d is None:
            continue
        evidence += 1
        if d.acks:
            violations.append(f"{_name(line)} failed but the client acknowledged it")
    return _verdict(violations, evidence, "failed consumptions", "the application failed no delivered message")


def changes_invisible_time_on_failure(rows: list[Row], ctx: PopContext) -> Finding:
    """PCLIENT-3: a delivery the application failed gets its invisible time changed (CHANGE_INVISIBLE with a handle
    of that delivery)."""
    by_delivery = _subject_deliveries(rows, ctx)
    violations, evidence = [], 0
    for line in _verdicts(ctx, "FAILURE"):
        d = by_delivery.get((str(line.get("message_id")), int(line.get("attempt", 0))))
        if d is None:
            continue
        evidence += 1
        if not d.changes:
            violations.append(f"{_name(line)} failed and its invisible time was not changed")
    return _verdict(violations, evidence, "failed consumptions", "the application failed no delivered message")


def retry_delay_grows(rows: list[Row], ctx: PopContext) -> Finding:
    """PCLIENT-4: the invisible time a consumer sets on a message's later failure is longer than on its earlier one
    (the retry interval grows with the number of retries)."""
    changes: dict[str, list[tuple[int, int]]] = {}
    for d in _subject_deliveries(rows, ctx).values():
        if d.changes:
            changes.setdefault(d.msg_id, []).append((d.attempt, int(d.changes[0].get("invisible_ms") or 0)))
    violations, evidence = [], 0
    for msg_id, seen in changes.items():
        seen.sort()
        for (a1, ms1), (a2, ms2) in zip(seen, seen[1:], strict=False):
            evidence += 1
            if ms2 <= ms1:
                violations.append(f"{msg_id}: attempt {a1} was made invisible for {ms1} ms, attempt {a2} for {ms2} ms")
    return _verdict(violations, evidence, "later failures of a message",
                    "no message failed twice with its invisible time changed both times")


def handles_were_received(rows: list[Row], ctx: PopContext) -> Finding:
    """PCLIENT-5: every handle the client acks or changes is one the broker gave that client (a POP's, or a change's
    new handle)."""
    given: dict[str, str] = {}
    violations, evidence = [], 0
    for row in sorted(rows, key=lambda r: r["seq"]):
        if row.get("group") != ctx.group:
            continue
        client = row.get("client_id")
        if row["event"] == "POP":
            given[str(row.get("handle"))] = str(client)
        elif row["event"] in ("ACK", "CHANGE_INVISIBLE") and client in ctx.subject_ids:
            evidence += 1
            handle = str(row.get("handle"))
            if given.get(handle) is None:
                violations.append(f"{row['event']} of a handle no POP gave: {handle[:60]}")
            elif given[handle] != client and given[handle] not in ctx.subject_ids:
                violations.append(f"{row['event']} by {client} of a handle given to {given[handle]}")
            new = _new_handle(row)
            if row["event"] == "CHANGE_INVISIBLE" and new:
                given[str(new)] = str(client)
    return _verdict(violations, evidence, "acks and changes of invisible time", "the client acked nothing")


def uses_the_new_handle(rows: list[Row], ctx: PopContext) -> Finding:
    """PCLIENT-6: after a change of invisible time, the client acks or changes that delivery with the handle the
    change returned, not the one it replaced."""
    violations, evidence = [], 0
    for d in deliveries(rows, ctx):
        if d.pop.get("client_id") not in ctx.subject_ids or not d.changes:
            continue
        later = sorted([*d.acks, *d.changes[1:]], key=lambda r: r["seq"])
        if not later:
            continue
        evidence += 1
        for row in later:
            current = _current_handle(d, int(row["seq"]))
            if str(row.get("handle")) != current:
                violations.append(f"{row['event']} of {d.msg_id} (attempt {d.attempt}) used a replaced handle")
    return _verdict(violations, evidence, "deliveries used after a change of invisible time",
                    "no delivery was acked or changed again after a change of its invisible time")


def _current_handle(d: Delivery, before_seq: int) -> str:
    handle = d.handles[0]
    for change in d.changes:
        if int(change["seq"]) < before_seq:
            handle = _new_handle(change) or handle
    return handle


def says_goodbye(rows: list[Row], ctx: PopContext) -> Finding:
    """PCLIENT-7: a consumer that stops gracefully tells the broker (NotifyClientTermination: its group loses the
    client, an UNSUBSCRIBE row)."""
    gone = {r.get("client_id") for r in rows if r["event"] == "UNSUBSCRIBE" and r.get("group") == ctx.group}
    violations = [f"{c} stopped without NotifyClientTermination" for c in sorted(ctx.graceful_ids - gone)]
    return _verdict(violations, len(ctx.graceful_ids), "gracefully stopped clients",
                    "no client of the scenario stopped gracefully")


def no_receive_after_goodbye(rows: list[Row], ctx: PopContext) -> Finding:
    """PCLIENT-8: no message is delivered to a client after its termination notice (it stops receiving first)."""
    left: dict[str, int] = {}
    for row in sorted(rows, key=lambda r: r["seq"]):
        if row.get("group") == ctx.group and row["event"] == "UNSUBSCRIBE" and row.get("client_id") in ctx.subject_ids:
            left.setdefault(str(row["client_id"]), int(row["seq"]))
    late = [r for r in rows if r["event"] == "POP" and r.get("group") == ctx.group
            and str(r.get("client_id")) in left and int(r["seq"]) > left[str(r["client_id"])]]
    violations = [f"{r.get('msg_id')} delivered to {r.get('client_id')} after its termination notice" for r in late]
    return _verdict(violations, len(left), "clients that sent a termination notice",
                    "no client of the scenario sent a termination notice")


def killed_consumers_messages_come_back(rows: list[Row], ctx: PopContext) -> Finding:
    """PCLIENT-9: a message a killed consumer held unacknowledged is delivered again once its invisible time has
    ended, and not before."""
    all_deliveries = deliveries(rows, ctx)
    violations, evidence, waited = [], 0, []
    for d in all_deliveries:
        if d.pop.get("client_id") not in ctx.killed_ids or d.acked:
            continue
        due = d.visible_again_us
        again = next((n for n in all_deliveries if n.msg_id == d.msg_id and n.pop["seq"] > d.pop["seq"]), None)
        if again is None:
            if due <= ctx.end_ts_us:
                evidence += 1
                violations.append(f"{d.msg_id} held by the killed consumer never came back "
                                  f"({(ctx.end_ts_us - due) / 1e6:.1f} s after its invisible time ended)")
            continue
        evidence += 1
        early_us = due - int(again.pop["ts"])
        waited.append(round((int(again.pop["ts"]) - int(d.pop["ts"])) / 1e6, 1))
        if early_us > 0:
            violations.append(f"{d.msg_id} delivered again {early_us / 1e6:.1f} s before its invisible time ended")
    return _verdict(violations, evidence, "messages the killed consumer held unacknowledged",
                    "the killed consumer held no unacknowledged message whose invisible time ended in the run",
                    {"came_back_after_s": max(waited) if waited else None})


def nothing_lost(rows: list[Row], ctx: PopContext) -> Finding:
    """PCLIENT-10: every message stored in the scenario's topic is acknowledged by the group by the end."""
    acked = {d.msg_id for d in deliveries(rows, ctx) if d.acked}
    missing = sorted(ctx.sent - acked)
    violations = [f"{m} never acknowledged" for m in missing]
    return _verdict(violations, len(ctx.sent), "messages sent", "the scenario sent no message",
                    {"acked": len(ctx.sent & acked), "sent": len(ctx.sent)})


#: Requirement id -> checker.
CHECKS: dict[str, Callable[[list[Row], PopContext], Finding]] = {
    "PCLIENT-1": acks_what_succeeded,
    "PCLIENT-2": no_ack_of_failures,
    "PCLIENT-3": changes_invisible_time_on_failure,
    "PCLIENT-4": retry_delay_grows,
    "PCLIENT-5": handles_were_received,
    "PCLIENT-6": uses_the_new_handle,
    "PCLIENT-7": says_goodbye,
    "PCLIENT-8": no_receive_after_goodbye,
    "PCLIENT-9": killed_consumers_messages_come_back,
    "PCLIENT-10": nothing_lost,
}
