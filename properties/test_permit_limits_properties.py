"""Seed 003's entry filter and the broker's dispatch limits, on random entries, permits and acks (the in-process
broker on simulated time).

Filter (FLOW-12): no corrupt entry or marker is ever dispatched, a shared subscription sends no delayed message
before its time, and the permits spent are exactly the messages sent; once every delay has passed, every ordinary
and delayed message has been sent once. Limits: no rate period dispatches more than the rate, and everything goes
out in the end (FLOW-13); a shared consumer never holds more unacknowledged messages than the limit, and after an ack
it is sent more only if acks brought it down to half the limit (FLOW-14).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from reference.broker.broker import Broker, BrokerComponents
from reference.broker.host import BrokerHost
from reference.broker.permits.entry_filter import DELIVER_AT_TIME, ENTRY_CHECKSUM, MARKER_TYPE
from reference.broker.permits.protocol import InitialPosition, Position, RecordingPermitChannel
from reference.clock import SimClock
from reference.store.message import Message

T, S = "PropT", "PropSub"
KINDS = ("plain", "corrupt", "marker", "delayed")
DELAY_MS = 10_000
PERIOD_MS = 1_000


@contextmanager
def broker_on(components: BrokerComponents | None) -> Iterator[tuple[Broker, SimClock]]:
    clock = SimClock()
    with tempfile.TemporaryDirectory() as tmp:
        host = BrokerHost(tmp, clock, components=components)
        broker = host.open()
        broker.create_topic(T, 1)
        try:
            yield broker, clock
        finally:
            host.close()


def _entry(kind: str, i: int, now: int) -> Message:
    body = f"{kind}-{i}".encode()
    properties = {
        "plain": {},
        "corrupt": {ENTRY_CHECKSUM: "1"},
        "marker": {MARKER_TYPE: "TXN_COMMIT"},
        "delayed": {DELIVER_AT_TIME: str(now + DELAY_MS)},
    }[kind]
    return Message(T, body, 0, properties=properties)


def filter_property(components: BrokerComponents | None = None):  # type: ignore[no-untyped-def]
    @given(kinds=st.lists(st.sampled_from(KINDS), min_size=1, max_size=10),
           sub_type=st.sampled_from(("Shared", "Exclusive")), permits=st.integers(1, 12))
    def prop(kinds: list[str], sub_type: str, permits: int) -> None:
        with broker_on(components) as (broker, clock):
            channel = RecordingPermitChannel("c1")
            broker.subscribe_permits(S, T, "c1", channel, sub_type, 0, InitialPosition.EARLIEST)
            for i, kind in enumerate(kinds):
                broker.send(_entry(kind, i, clock.now_ms()))
            broker.flow(S, "c1", T, permits)
            sent = [m.body.decode() for m in channel.messages]
            note(f"sent before the delays: {sent}")
            assert not [b for b in sent if b.startswith(("corrupt", "marker"))], "a filtered entry was dispatched"
            if sub_type == "Shared":
                assert not [b for b in sent if b.startswith("delayed")], "a delayed message went out early"
            assert broker.permits.consumer(S, "c1", T).permits == permits - len(sent), "a filtered entry cost a permit"
            clock.advance(DELAY_MS)
            broker.flow(S, "c1", T, 100)
            sent = [m.body.decode() for m in channel.messages]
            expected = [f"{k}-{i}" for i, k in enumerate(kinds) if k in ("plain", "delayed")]
            assert sorted(sent) == sorted(expected), "every ordinary and delayed message once"

    return prop


def rate_property(components: BrokerComponents | None = None):  # type: ignore[no-untyped-def]
    @given(rate=st.integers(1, 5), messages=st.integers(1, 15), permits=st.integers(1, 20),
           sub_type=st.sampled_from(("Shared", "Exclusive")))
    def prop(rate: int, messages: int, permits: int, sub_type: str) -> None:
        with broker_on(components) as (broker, clock):
            broker.permits.change_limits({"dispatchThrottlingRatePerSubscriptionInMsg": rate})
            channel = RecordingPermitChannel("c1")
            broker.subscribe_permits(S, T, "c1", channel, sub_type, 0, InitialPosition.EARLIEST)
            for i in range(messages):
                broker.send(Message(T, b"m%d" % i, 0))
            broker.flow(S, "c1", T, permits)
            counts = [len(channel.messages)]
            for _ in range(messages + 1):
                clock.advance(PERIOD_MS)
                counts.append(len(channel.messages))
            per_period = [b - a for a, b in zip([0, *counts], counts, strict=False)]
            note(f"dispatched per period: {per_period}")
            assert max(per_period) <= rate, "a period dispatched more than the rate"
            assert counts[-1] == min(messages, permits), "the rate delays dispatch, it does not stop it"

    return prop


def unacked_property(components: BrokerComponents | None = None):  # type: ignore[no-untyped-def]
    @given(limit=st.integers(1, 6), messages=st.integers(1, 20), acks=st.lists(st.integers(1, 3), max_size=10))
    def prop(limit: int, messages: int, acks: list[int]) -> None:
        with broker_on(components) as (broker, _):
            broker.permits.change_limits({"maxUnackedMessagesPerConsumer": limit})
            channel = RecordingPermitChannel("c1")
            broker.subscribe_permits(S, T, "c1", channel, "Shared", 0, InitialPosition.EARLIEST)
            for i in range(messages):
                broker.send(Message(T, b"m%d" % i, 0))
            broker.flow(S, "c1", T, 1_000)
            acked = 0
            for n in acks:
                unacked = len(channel.messages) - acked
                assert unacked <= limit, f"{unacked} unacknowledged messages held past the limit {limit}"
                before = len(channel.messages)
                batch = channel.messages[acked:acked + n]
                broker.ack_permits(S, "c1", T, [Position(*m.position) for m in batch])
                acked += len(batch)
                was_blocked = unacked >= limit
                if was_blocked and len(channel.messages) > before:
                    assert before - acked <= limit // 2, "released before acks reached half the limit"
            assert len(channel.messages) - acked <= limit

    return prop


@pytest.mark.req("FLOW-12.corrupt", "FLOW-12.marker", "FLOW-12.delayed-held", "FLOW-12.delayed-released")
def test_filtered_entries_never_go_out_and_cost_nothing() -> None:
    settings(max_examples=60)(filter_property())()


@pytest.mark.req("FLOW-13")
def test_no_period_exceeds_the_dispatch_rate() -> None:
    settings(max_examples=60)(rate_property())()


@pytest.mark.req("FLOW-14")
def test_unacked_limit_blocks_and_half_releases() -> None:
    settings(max_examples=60)(unacked_property())()
