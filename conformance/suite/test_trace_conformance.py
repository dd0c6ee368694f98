"""TRACE-1, TRACE-2 and POP-9: what a broker records, read through the target (capability ``trace``).

In process the reference broker records into memory; over ``remoting://`` the runner that owns the broker
(``mqtck broker --remoting --control``) records its trace and serves it on the control channel, and the target
keeps the rows of its own topics and groups. A real Apache broker records no mqtck trace: there these are not
applicable (issue 18's recorder is what turns its wire traffic into one).

The rows are judged by the schema's own tables (``reference.rules.trace_schema``: the columns, the events
and the columns each requires), which render ``fixtures/trace-schema-v1.json``; no JSON Schema library is
needed to run the suite.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any, Protocol

import pytest

from conformance.targets import ExpiryTarget, PopTarget, PullReply, Target, TargetError, TraceTarget
from conformance.targets.patience import visible
from reference.rules.trace_schema import BASE_COLUMNS, COLUMNS, EVENT_REQUIRED, SCHEMA_VERSION, missing_columns


class TracedExpiryTarget(ExpiryTarget, TraceTarget, Protocol):
    """A target with retention_expire, store_layout and trace."""


class TracedPopTarget(PopTarget, TraceTarget, Protocol):
    """A target with pop and trace."""


pytestmark = pytest.mark.needs("trace")

#: Suspend time of the held pull whose answer must carry held_ms, and how early the clocks may disagree.
HOLD_MS = 1_000
EARLY_TOLERANCE_MS = 50
#: With clock control: time advanced so that the held pull times out (its hold plus one 5 s check).
TIMEOUT_ADVANCE_MS = HOLD_MS + 5_000
#: Over the wire: how long a row may take to show in the runner's trace after its answer came.
ROW_WAIT_S = 5.0
KNOWN_COLUMNS = frozenset(name for name, _, _ in COLUMNS)
INTEGER_COLUMNS = frozenset(name for name, _, jtype in COLUMNS if jtype == "integer")


def rows_until(target: TraceTarget, done: Callable[[list[dict[str, Any]]], bool]) -> list[dict[str, Any]]:
    """The target's trace rows once ``done(rows)`` holds (at once in process; over the wire the runner records
    after it answered, so wait a little)."""
    deadline = time.monotonic() + ROW_WAIT_S
    while True:
        rows = target.trace_rows()
        if done(rows) or time.monotonic() > deadline:
            return rows
        time.sleep(0.05)


def events(rows: list[dict], *kinds: str, **match: object) -> list[dict]:
    return [r for r in rows if r["event"] in kinds and all(r.get(k) == v for k, v in match.items())]


def check_schema(rows: list[dict]) -> None:
    """TRACE-1 on each row: base columns, known columns only, the event's required columns, integer columns
    holding integers, schema version 1; seq strictly increasing within (run, source)."""
    last: dict[tuple[str, str], int] = defaultdict(lambda: -1)
    for row in rows:
        unknown = set(row) - KNOWN_COLUMNS
        assert not unknown, f"unknown columns {sorted(unknown)}: {row}"
        assert all(row.get(c) is not None for c in BASE_COLUMNS), f"a base column is missing: {row}"
        assert row["schema_version"] == SCHEMA_VERSION, row
        assert row["event"] in EVENT_REQUIRED, f"unknown event {row['event']!r}"
        assert missing_columns(row) == [], f"{row['event']} lacks {missing_columns(row)}: {row}"
        for c in INTEGER_COLUMNS & set(row):
            v = row[c]
            assert v is None or (isinstance(v, int) and not isinstance(v, bool)), f"{c} is not an integer: {row}"
        key = (row["run"], row["source"])
        assert row["seq"] > last[key], f"seq does not increase within {key}: {last[key]} then {row['seq']}"
        last[key] = row["seq"]


def held_pull(target: Target, group: str, topic: str, offset: int) -> PullReply:
    pending = target.start_pull(group, topic, 0, offset, suspend_ms=HOLD_MS)
    if "clock_control" in target.capabilities:
        target.advance(TIMEOUT_ADVANCE_MS)
    return pending.result()


@pytest.mark.req("TRACE-2", "TRACE-1")
@pytest.mark.needs("pull", "commit_offset", "consumer_registry")
def test_accepted_operations_are_recorded_and_refused_ones_are_not(target: TraceTarget) -> None:
    target.create_topic("TR", 1)
    target.heartbeat("tr-conn", "tr-client", "TRG", {"TR": "*"})
    receipt = target.send("TR", 0, b"recorded", "A")
    for refused in (lambda: target.send("TR", 7, b"no such queue", "A"),
                    lambda: target.start_pull("TRG", "TR", 0, -1).result()):
        with pytest.raises(TargetError):
            refused()
    found = target.start_pull("TRG", "TR", 0, 0).result()
    assert found.status == "FOUND"
    held = held_pull(target, "TRG", "TR", 1)
    assert held.code == "PULL_NOT_FOUND"
    target.commit_offset("TRG", "TR", 0, 1)
    # Fresh before it leaves: a runner with a short channelExpiredTimeout could otherwise expire it first.
    target.heartbeat("tr-conn", "tr-client", "TRG", {"TR": "*"})
    target.unregister("tr-conn", "TRG")

    rows = rows_until(target, lambda rs: bool(events(rs, "UNSUBSCRIBE", group="TRG")))
    check_schema(rows)
    sub = events(rows, "SUBSCRIBE", group="TRG")[0]
    assert (sub["topic"], sub["expression"], sub["model"]) == ("TR", "*", "CLUSTERING"), sub
    sends = events(rows, "SEND", topic="TR")
    assert [(r["queue_id"], r["offset"], r["tags"]) for r in sends] == [(0, receipt.queue_offset, "A")], (
        f"one SEND for the accepted send, none for the one refused: {sends}")
    requests = events(rows, "PULL_REQ", group="TRG")
    assert [r["offset"] for r in requests] == [0, 1] and requests[1]["suspend_ms"] == HOLD_MS, (
        f"a PULL_REQ for each accepted pull, none for the one refused: {requests}")
    answers = events(rows, "PULL_RESP", group="TRG")
    expected = [(0, "FOUND", 1), (1, "OFFSET_OVERFLOW_ONE", 0)]
    assert [(r["offset"], r["status"], r["count"]) for r in answers] == expected, answers
    assert answers[0]["next_offset"] == 1 and answers[1]["held_ms"] >= HOLD_MS - EARLY_TOLERANCE_MS, answers
    (commit,) = events(rows, "COMMIT", group="TRG")
    assert (commit["topic"], commit["queue_id"], commit["offset"]) == ("TR", 0, 1), commit
    assert events(rows, "UNSUBSCRIBE", group="TRG"), "the unregistered client's UNSUBSCRIBE"
    assert rows.index(events(rows, "UNSUBSCRIBE", group="TRG")[0]) > rows.index(commit), "it left after its commit"


@pytest.mark.req("TRACE-2")
@pytest.mark.needs("pull", "retention_expire", "store_layout")
def test_a_raised_min_offset_is_recorded(target: TracedExpiryTarget) -> None:
    from conformance.suite.support import fill_three_segments, segment_bytes

    target.create_topic("TRR", 1)
    fill_three_segments(target, "TRR", 0, segment_bytes(target))
    target.expire_retention()
    lo = target.min_max("TRR", 0)[0]
    assert lo > 0
    rows = rows_until(target, lambda rs: bool(events(rs, "RETENTION", topic="TRR")))
    check_schema(rows)
    assert [(r["queue_id"], r["min_offset"]) for r in events(rows, "RETENTION", topic="TRR")] == [(0, lo)]


@pytest.mark.req("POP-9", "TRACE-1")
@pytest.mark.needs("pop")
def test_pop_ack_and_change_invisible_are_recorded(target: TracedPopTarget) -> None:
    target.create_topic("TRP", 1)
    sent = target.send("TRP", 0, b"popped", "A")
    visible(target, "TRP", 0, sent.queue_offset + 1)
    (m,) = target.pop("TRPG", "TRP", -1, 1, 60_000, 0).result().messages
    new_handle = target.change_invisible("TRPG", "TRP", m.handle, 30_000)
    target.ack("TRPG", "TRP", new_handle)

    rows = rows_until(target, lambda rs: bool(events(rs, "ACK", group="TRPG")))
    check_schema(rows)
    (popped,) = events(rows, "POP", group="TRPG")
    assert (popped["topic"], popped["queue_id"], popped["offset"], popped["reconsume_times"]) == ("TRP", 0, 0, 0)
    assert popped["invisible_ms"] == 60_000 and popped["msg_id"] == m.msg_id, popped
    (change,) = events(rows, "CHANGE_INVISIBLE", group="TRPG")
    assert change["invisible_ms"] == 30_000 and change["msg_id"] == m.msg_id, change
    # The new handle as the broker wrote it (a wire client spells its handles itself, from the answer's fields).
    assert json.loads(change["detail"])["new_handle"] not in ("", change["handle"]), change
    assert new_handle != m.handle
    (ack,) = events(rows, "ACK", group="TRPG")
    assert (ack["status"], ack["msg_id"]) == ("OK", m.msg_id), ack
