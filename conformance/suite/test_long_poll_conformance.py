"""LPOLL requirements through the Target interface on simulated time (targets with clock_control; the
real-time variants for targets without it are in test_long_poll_realtime_conformance)."""

from __future__ import annotations

import pytest

from conformance.suite.support import RecordProperty
from conformance.targets import Target, TraceTarget

pytestmark = pytest.mark.needs("pull", "long_poll", "clock_control")
CHECK_MS = 5_000  # the long-polling check interval (seed 000)


@pytest.mark.req("LPOLL-1.held", "LPOLL-2", "LPOLL-3", "LPOLL-7")
def test_held_pull_times_out_within_one_check(target: Target) -> None:
    target.create_topic("LP", 1)
    pending = target.start_pull("G", "LP", 0, 0, suspend_ms=7_000)
    assert not pending.done(), "a pull that finds nothing with SUSPEND must be held"
    target.advance(6_999)
    assert not pending.done(), "answered before its suspend timeout with no message"
    target.advance(CHECK_MS + 1)
    assert pending.done(), "not answered within timeout + one check interval"
    r = pending.result()
    assert r.code == "PULL_NOT_FOUND" and not r.messages
    assert 7_000 <= r.held_ms <= 7_000 + CHECK_MS


@pytest.mark.req("LPOLL-4", "LPOLL-7")
def test_matching_arrival_wakes_at_once(target: Target) -> None:
    target.create_topic("LP", 1)
    pending = target.start_pull("G", "LP", 0, 0, suspend_ms=15_000, expression="A")
    target.advance(1_234)
    target.send("LP", 0, b"hello", "A")
    assert pending.done(), "a matching arrival must wake the held pull at once"
    r = pending.result()
    assert r.code == "SUCCESS" and [m.body for m in r.messages] == [b"hello"] and r.held_ms == 1_234


@pytest.mark.req("LPOLL-5")
def test_non_matching_arrival_does_not_wake(target: Target) -> None:
    target.create_topic("LP", 1)
    pending = target.start_pull("G", "LP", 0, 0, suspend_ms=15_000, expression="A")
    target.send("LP", 0, b"other", "B")
    assert not pending.done(), "a non-matching message woke the held pull on arrival"
    target.send("LP", 0, b"mine", "A")
    r = pending.result()
    assert r.code == "SUCCESS" and [m.tags for m in r.messages] == ["A"]


@pytest.mark.req("LPOLL-8")
def test_periodic_check_ignores_non_matching_growth(target: Target) -> None:
    target.create_topic("LP", 1)
    pending = target.start_pull("G", "LP", 0, 0, suspend_ms=15_000, expression="A")
    target.send("LP", 0, b"other", "B")
    target.advance(CHECK_MS * 2)
    assert not pending.done(), "a periodic check answered the held pull for a non-matching message"
    target.send("LP", 0, b"mine", "A")
    r = pending.result()
    assert r.code == "SUCCESS" and [m.tags for m in r.messages] == ["A"]


#: The wake bound of the trace audit (trace-schema.md, long poll): an arrival wakes a held pull within 1 s.
WAKE_BOUND_MS = 1_000


@pytest.mark.req("LPOLL-4")
def test_wake_latency(target: Target, record_property: RecordProperty) -> None:
    """Held pulls on eight queues, each woken by a matching send after a different wait; the time from
    the send to the answer is recorded for the report's histogram."""
    target.create_topic("LW", 8)
    latencies = []
    for q in range(8):
        pending = target.start_pull("G", "LW", q, 0, suspend_ms=15_000)
        waited = 300 + 400 * q
        target.advance(waited)
        target.send("LW", q, b"wake", "A")
        r = pending.result()
        assert r.code == "SUCCESS" and len(r.messages) == 1
        latencies.append(r.held_ms - waited)
    record_property("lpoll.wake_latency_ms", latencies)
    assert max(latencies) <= WAKE_BOUND_MS, f"wake latencies {latencies} ms exceed {WAKE_BOUND_MS} ms"


@pytest.mark.req("LPOLL-1.once")
@pytest.mark.needs("trace")
def test_held_pulls_are_answered_exactly_once(target: TraceTarget) -> None:
    """One held pull woken by an arrival and one left to time out: the broker's trace shows one answer for each,
    also after their time-outs and the hold checks that follow have passed."""
    target.create_topic("L1", 2)
    woken = target.start_pull("G", "L1", 0, 0, suspend_ms=7_000)
    timed = target.start_pull("G", "L1", 1, 0, suspend_ms=7_000)
    target.advance(1_000)
    target.send("L1", 0, b"wake")
    assert woken.done() and not timed.done()
    target.advance(7_000 + 2 * CHECK_MS)
    assert timed.done()
    answers = [(r["queue_id"], r["status"]) for r in target.trace_rows()
               if r["event"] == "PULL_RESP" and r["topic"] == "L1" and r["source"].startswith("broker:")]
    assert sorted(q for q, _ in answers) == [0, 1], f"the answers to the two held pulls, by queue: {answers}"
    assert dict(answers)[0] == "FOUND", f"the woken pull's answer: {answers}"
