"""Seed 003's remaining permit behaviours through the Target interface: the entry filter (FLOW-12), the dispatch
rate (FLOW-13) and maxUnackedMessagesPerConsumer (FLOW-14).

Corrupt entries and markers are written only by a broker or a damaged ledger, never by a client: a target that
cannot store them (pulsar://) lacks ``entry_faults`` and the clauses are not applicable there. The limits are broker
settings a test must be able to change (``permit_limits``), and time must move under the test's control
(``clock_control``) for the rate's periods and a delayed message's time to pass without waiting.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from conformance.targets import (
    DelayedTarget,
    EntryFaultTarget,
    PermitLimitsTarget,
    PermitTarget,
)

pytestmark = pytest.mark.needs("flow_permits")
T = "FilterT"
S = "FilterSub"
#: Upstream Pulsar's rate period (broker.conf ratePeriodInSecond=1).
RATE_PERIOD_MS = 1_000
#: How far ahead a delayed message is due: far beyond anything a test does meanwhile.
DELAY_MS = 3_600_000


def bodies(target: PermitTarget, client_id: str) -> list[bytes]:
    return [m.body for m in target.dispatched(S, client_id, T)]


@pytest.fixture
def limits(target: PermitLimitsTarget) -> Iterator[PermitLimitsTarget]:
    """The target; dispatch limits a test changes are put back afterwards."""
    saved: dict[str, int] = {}
    real = target.change_permit_limits

    def change(settings: dict[str, int]) -> dict[str, int]:
        previous = real(settings)
        for name, value in previous.items():
            saved.setdefault(name, value)
        return previous

    target.change_permit_limits = change  # type: ignore[method-assign]
    yield target
    if saved:
        real(saved)


@pytest.mark.req("FLOW-12.corrupt")
@pytest.mark.needs("entry_faults")
def test_corrupt_entries_are_never_dispatched(target: EntryFaultTarget) -> None:
    target.create_topic(T, 1)
    target.subscribe_permits(S, T, "c1")
    target.send(T, 0, b"m0")
    target.send_corrupt(T, 0, b"damaged")
    target.send(T, 0, b"m1")
    target.flow(S, "c1", T, 2)
    assert bodies(target, "c1") == [b"m0", b"m1"], "a corrupt entry is filtered out before dispatch"
    assert target.permits(S, "c1", T) == 0, "a filtered entry costs no permit"
    target.redeliver(S, "c1", T)
    target.flow(S, "c1", T, 5)
    assert bodies(target, "c1")[2:] == [b"m0", b"m1"], "nor is it sent when everything unacknowledged is again"


@pytest.mark.req("FLOW-12.marker")
@pytest.mark.needs("entry_faults")
def test_markers_are_never_dispatched(target: EntryFaultTarget) -> None:
    target.create_topic(T, 1)
    for cid in ("c1", "c2"):
        target.subscribe_permits(S, T, cid, "Shared")
    target.send_marker(T, 0)
    target.send(T, 0, b"m0")
    target.send_marker(T, 0)
    target.send(T, 0, b"m1")
    target.flow(S, "c1", T, 2)
    assert bodies(target, "c1") == [b"m0", b"m1"], "markers are the broker's own entries, never a consumer's"
    assert target.permits(S, "c1", T) == 0
    target.close_consumer(S, "c1", T)
    target.flow(S, "c2", T, 5)
    assert sorted(bodies(target, "c2")) == [b"m0", b"m1"], "a leaving consumer's messages come back, no marker"


@pytest.mark.req("FLOW-12.delayed-held")
@pytest.mark.needs("delayed_delivery")
def test_a_delayed_message_waits_and_the_others_pass(target: DelayedTarget) -> None:
    target.create_topic(T, 1)
    target.subscribe_permits(S, T, "c1", "Shared")
    target.flow(S, "c1", T, 5)
    target.send_delayed(T, 0, b"later", DELAY_MS)
    target.send(T, 0, b"now")
    assert bodies(target, "c1") == [b"now"], "a message whose time has not come is not dispatched; others pass"
    assert target.permits(S, "c1", T) == 4, "the held message costs no permit"


@pytest.mark.req("FLOW-12.delayed-released")
@pytest.mark.needs("delayed_delivery", "clock_control")
def test_a_delayed_message_is_dispatched_when_due(target: DelayedTarget) -> None:
    target.create_topic(T, 1)
    target.subscribe_permits(S, T, "c1", "Shared")
    target.flow(S, "c1", T, 5)
    target.send_delayed(T, 0, b"later", DELAY_MS)
    target.send(T, 0, b"now")
    target.advance(DELAY_MS - 1)
    assert bodies(target, "c1") == [b"now"], "not a millisecond early"
    target.advance(1)
    sent = target.dispatched(S, "c1", T)
    assert [m.body for m in sent] == [b"now", b"later"], "dispatched once its time has come, without a new FLOW"
    assert sent[1].redelivery_count == 0, "a delayed message is not a redelivery"


@pytest.mark.req("FLOW-13")
@pytest.mark.needs("permit_limits", "clock_control")
def test_dispatch_rate_skips_reads_until_the_next_period(limits: PermitLimitsTarget) -> None:
    target = limits
    target.create_topic(T, 1)
    target.change_permit_limits({"dispatchThrottlingRatePerSubscriptionInMsg": 3})
    target.subscribe_permits(S, T, "c1")
    target.flow(S, "c1", T, 10)
    for i in range(8):
        target.send(T, 0, b"m%d" % i)
    assert len(bodies(target, "c1")) == 3, "the rate, not the 10 permits, bounds a period's dispatch"
    assert target.permits(S, "c1", T) == 7
    target.advance(RATE_PERIOD_MS)
    assert len(bodies(target, "c1")) == 6, "the next period resumes without another FLOW"
    target.advance(RATE_PERIOD_MS)
    assert bodies(target, "c1") == [b"m%d" % i for i in range(8)]


@pytest.mark.req("FLOW-14")
@pytest.mark.needs("permit_limits")
def test_consumer_blocked_on_unacked_messages_is_released_by_acks(limits: PermitLimitsTarget) -> None:
    target = limits
    target.create_topic(T, 1)
    target.change_permit_limits({"maxUnackedMessagesPerConsumer": 4})
    target.subscribe_permits(S, T, "c1", "Shared")
    target.flow(S, "c1", T, 100)
    for i in range(10):
        target.send(T, 0, b"m%d" % i)
    sent = target.dispatched(S, "c1", T)
    assert len(sent) == 4, "a consumer holding maxUnackedMessagesPerConsumer unacked messages is sent no more"
    target.ack_dispatched(S, "c1", T, sent[:1])
    assert len(target.dispatched(S, "c1", T)) == 4, "still blocked above half the limit (3 unacked)"
    target.ack_dispatched(S, "c1", T, sent[1:2])
    after = target.dispatched(S, "c1", T)
    assert len(after) == 6, "released at half the limit (2 unacked): sent up to the limit again"
    target.ack_dispatched(S, "c1", T, after[2:6])
    assert [m.body for m in target.dispatched(S, "c1", T)] == [b"m%d" % i for i in range(10)]
