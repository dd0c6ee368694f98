"""FLOW requirements (Pulsar-style permits) through the Target interface."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import pytest

from conformance.targets import DispatchedRecord, PermitTarget, RestartTarget, Target, TargetError


class RestartablePermitTarget(PermitTarget, RestartTarget, Protocol):
    """A target with flow_permits and restart."""


pytestmark = pytest.mark.needs("flow_permits")
T = "FlowT"
S = "FlowSub"


def singles(target: Target, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        target.send(T, 0, b"s%d" % i)


@pytest.mark.req("FLOW-1.credit")
def test_flow_adds_incremental_credit(target: PermitTarget) -> None:
    target.create_topic(T, 1)
    target.subscribe_permits(S, T, "c1")
    assert target.permits(S, "c1", T) == 0, "a consumer starts with no permits"
    target.flow(S, "c1", T, 5)
    target.flow(S, "c1", T, 3)
    assert target.permits(S, "c1", T) == 8, "FLOW adds credit, it does not restate the window"
    assert target.dispatched(S, "c1", T) == []


@pytest.mark.req("FLOW-1.refusal")
@pytest.mark.needs("flow_refusals")
def test_flow_refuses_bad_permits(target: PermitTarget) -> None:
    target.create_topic(T, 1)
    target.subscribe_permits(S, T, "c1")
    target.flow(S, "c1", T, 8)
    for bad in (0, -1, 2**32):
        with pytest.raises(TargetError) as err:
            target.flow(S, "c1", T, bad)
        assert err.value.field == "messagePermits" and err.value.code == "INVALID_PERMITS"
    with pytest.raises(TargetError) as err:
        target.flow(S, "nobody", T, 5)
    assert err.value.code == "CONSUMER_NOT_FOUND"
    assert target.permits(S, "c1", T) == 8 and target.dispatched(S, "c1", T) == []


@pytest.mark.req("FLOW-2")
def test_dispatch_only_with_permits_and_batches_whole(target: PermitTarget) -> None:
    target.create_topic(T, 1)
    target.subscribe_permits(S, T, "c1")
    singles(target, 3)
    target.send_batch(T, 0, [b"b0", b"b1", b"b2", b"b3", b"b4"])
    assert target.dispatched(S, "c1", T) == [], "nothing is sent at 0 permits"
    target.flow(S, "c1", T, 4)
    sent = [m.body for m in target.dispatched(S, "c1", T)]
    assert sent == [b"s0", b"s1", b"s2", b"b0", b"b1", b"b2", b"b3", b"b4"], "the batch is sent whole, never split"
    assert target.permits(S, "c1", T) == -4, "one permit per message: 4 granted, 8 sent"
    singles(target, 1, start=3)
    target.flow(S, "c1", T, 2)
    assert len(target.dispatched(S, "c1", T)) == 8, "nothing is sent while the permits are 0 or below"
    assert target.permits(S, "c1", T) == -2, "FLOW adds to negative permits"
    target.flow(S, "c1", T, 3)
    assert [m.body for m in target.dispatched(S, "c1", T)][8:] == [b"s3"], "permits above 0 again: sending resumes"
    assert target.permits(S, "c1", T) == 0


@pytest.mark.req("FLOW-11")
def test_no_entry_is_started_without_permits(target: PermitTarget) -> None:
    target.create_topic(T, 1)
    target.subscribe_permits(S, T, "c1")
    target.send_batch(T, 0, [b"a0", b"a1", b"a2"])
    target.send_batch(T, 0, [b"b0", b"b1", b"b2"])
    target.flow(S, "c1", T, 2)
    sent = target.dispatched(S, "c1", T)
    assert [m.body for m in sent] == [b"a0", b"a1", b"a2"], "the second entry started at -1 permits"
    assert target.permits(S, "c1", T) == -1, "an overshoot of the one entry started with permits, less one"
    target.flow(S, "c1", T, 2)
    assert [m.body for m in target.dispatched(S, "c1", T)][3:] == [b"b0", b"b1", b"b2"]


@pytest.mark.req("FLOW-3")
def test_no_freeze_while_permits_and_messages_are_there(target: PermitTarget) -> None:
    target.create_topic(T, 1)
    target.subscribe_permits(S, T, "c1", "Shared")
    target.flow(S, "c1", T, 3)
    singles(target, 2)
    assert len(target.dispatched(S, "c1", T)) == 2, "an arrival must be dispatched to a consumer with permits"
    singles(target, 3, start=2)
    assert len(target.dispatched(S, "c1", T)) == 3 and target.permits(S, "c1", T) == 0
    target.subscribe_permits(S, T, "c2", "Shared")
    target.flow(S, "c2", T, 10)
    assert len(target.dispatched(S, "c2", T)) == 2, "a new consumer's FLOW must release the backlog"
    target.redeliver(S, "c1", T)
    assert len(target.dispatched(S, "c2", T)) == 5, "a redelivery request must be dispatched to whoever has permits"


@pytest.mark.req("FLOW-4")
def test_exclusive_and_failover_have_one_active_consumer(target: PermitTarget) -> None:
    target.create_topic(T, 1)
    target.create_topic("FailT", 1)
    target.subscribe_permits(S, T, "c1", "Exclusive")
    with pytest.raises(TargetError) as err:
        target.subscribe_permits(S, T, "c2", "Exclusive")
    assert err.value.code == "CONSUMER_BUSY"
    for cid in ("c2", "c1"):
        target.subscribe_permits("FailSub", "FailT", cid, "Failover")
        target.flow("FailSub", cid, "FailT", 10)
    for i in range(4):
        target.send("FailT", 0, b"f%d" % i)
    first = target.dispatched("FailSub", "c1", "FailT")
    assert len(first) == 4 and target.dispatched("FailSub", "c2", "FailT") == [], "only the active consumer (c1)"
    target.ack_dispatched("FailSub", "c1", "FailT", first[:2])
    target.close_consumer("FailSub", "c1", "FailT")
    taken_over = target.dispatched("FailSub", "c2", "FailT")
    assert [m.body for m in taken_over] == [b"f2", b"f3"], "the new active consumer gets every unacked message"
    assert all(m.redelivery_count == 0 for m in taken_over)
    target.redeliver("FailSub", "c2", "FailT")
    assert [m.body for m in target.dispatched("FailSub", "c2", "FailT")] == [b"f2", b"f3", b"f2", b"f3"]


@dataclass(frozen=True)
class SharedReplay:
    """What the shared-subscription scenario of FLOW-5 and FLOW-6 dispatched, step by step."""

    first_c1: list[DispatchedRecord]
    first_c2: list[DispatchedRecord]
    again: list[DispatchedRecord]
    c2_permits_after_replay: int
    after_leave: list[DispatchedRecord]


def shared_replay(target: PermitTarget) -> SharedReplay:
    """Two Shared consumers with 2 permits each and 6 messages; c1 acks its first message and asks for both back
    (the acked one is ignored), c2 takes the replay, then c2 leaves and c1 takes everything left.

    Which messages each consumer gets first is the broker's choice (the reference deals them out in runs, Pulsar
    round robin entry by entry), so the redelivered message is named by what c1 was sent, never by its body.
    """
    target.create_topic(T, 1)
    for cid in ("c1", "c2"):
        target.subscribe_permits(S, T, cid, "Shared")
        target.flow(S, cid, T, 2)
    singles(target, 6)
    c1, c2 = target.dispatched(S, "c1", T), target.dispatched(S, "c2", T)
    target.ack_dispatched(S, "c1", T, c1[:1])
    target.redeliver(S, "c1", T, c1)  # the acked one is ignored
    target.flow(S, "c2", T, 2)
    again = target.dispatched(S, "c2", T)[2:]
    permits = target.permits(S, "c2", T)
    target.close_consumer(S, "c2", T)
    target.flow(S, "c1", T, 10)
    return SharedReplay(c1, c2, again, permits, target.dispatched(S, "c1", T)[2:])


@pytest.mark.req("FLOW-5")
def test_shared_subscription_replays_before_new_messages(target: PermitTarget) -> None:
    run = shared_replay(target)
    c1, c2 = run.first_c1, run.first_c2
    assert len(c1) == 2 and len(c2) == 2 and not {m.msg_id for m in c1} & {m.msg_id for m in c2}
    assert len(run.again) == 2 and run.again[0].msg_id == c1[1].msg_id, "the unacked message comes back first"
    assert run.again[1].body == b"s4", "replay first, then new messages"
    assert run.c2_permits_after_replay == 0, "a redelivered message takes a permit again"
    unacked = sorted({b"s%d" % i for i in range(6)} - {c1[0].body})
    assert sorted(m.body for m in run.after_leave) == unacked, "a leaving consumer's messages are replayed"


@pytest.mark.req("FLOW-6")
def test_shared_subscription_counts_redeliveries(target: PermitTarget) -> None:
    run = shared_replay(target)
    assert len(run.first_c1) == 2 and len(run.again) == 2
    redelivered = run.first_c1[1].body
    assert all(m.redelivery_count == 0 for m in run.first_c1 + run.first_c2), "a first dispatch carries 0"
    assert run.again[0].redelivery_count == 1, "the first redelivery carries redelivery count 1"
    assert run.again[1].redelivery_count == 0, "a new message after the replay carries 0"
    counts = {m.body: m.redelivery_count for m in run.after_leave}
    assert counts.get(redelivered) == 2, "the second redelivery (its consumer left) carries 2"
    assert counts.get(b"s5") == 0, "a message first sent after the leave carries 0"


@pytest.mark.req("FLOW-10")
@pytest.mark.needs("restart")
def test_subscription_survives_a_restart(target: RestartablePermitTarget) -> None:
    target.create_topic(T, 1)
    target.subscribe_permits(S, T, "c1")
    target.flow(S, "c1", T, 10)
    singles(target, 4)
    sent = target.dispatched(S, "c1", T)
    target.ack_dispatched(S, "c1", T, sent[:2])
    target.restart()
    singles(target, 1, start=4)
    target.subscribe_permits(S, T, "c1")
    target.flow(S, "c1", T, 10)
    assert [m.body for m in target.dispatched(S, "c1", T)] == [b"s2", b"s3", b"s4"]
