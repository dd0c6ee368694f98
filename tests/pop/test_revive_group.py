"""The broker's subscription group table and the revive's group check (seed 004 lines 1111-1115; REVIVE-9, REVIVE-10),
in-process on simulated time."""

from __future__ import annotations

import pytest

from reference.broker.broker import Broker
from reference.broker.pop.ack import SUBSCRIPTION_GROUP_NOT_EXIST
from reference.broker.pop.protocol import PopMessageRequest, RecordingPopChannel
from reference.broker.protocol import ConsumerData, RecordingChannel
from reference.broker.settings import apply_settings
from reference.clock import SimClock
from reference.rules.errors import InvalidRequest
from reference.rules.filter import SubscriptionData
from reference.store.message import Message
from tests.pop.test_pop_broker import G, T, pop_broker

RETRY = f"%RETRY%{G}_{T}"


def pop_one(broker: Broker, invisible_ms: int = 5_000) -> None:
    popped = broker.pop(PopMessageRequest(G, T, -1, 32, invisible_ms, 0), RecordingPopChannel("c"))
    assert popped is not None and len(popped.messages) == 1


@pytest.mark.req("REVIVE-9")
def test_a_deleted_groups_checkpoint_is_dropped_with_auto_creation_off() -> None:
    with pop_broker(queues=1) as (broker, clock, _sink):
        apply_settings(broker, {"autoCreateSubscriptionGroup": False})
        broker.subscription_groups.update({"groupName": G, "consumeEnable": True})
        broker.send(Message(T, b"x", 0, tags="A"))
        pop_one(broker)
        assert broker.subscription_groups.delete(G)
        clock.advance(60_000)
        assert broker.pop_service.revive.pending_count() == 0, "the revive service moved past the checkpoint"
        assert broker.store.topics().get(RETRY) is None, "nothing was revived"
        assert broker.subscription_groups.find(G) is None, "the skip did not create the group"


@pytest.mark.req("REVIVE-10")
def test_a_deleted_groups_checkpoint_is_revived_with_auto_creation_on() -> None:
    with pop_broker(queues=1) as (broker, clock, _sink):
        broker.send(Message(T, b"x", 0, tags="A"))
        pop_one(broker)
        assert broker.subscription_groups.find(G) is not None, "the pop created the group (auto-creation is on)"
        assert broker.subscription_groups.delete(G)
        clock.advance(60_000)
        assert broker.store.get_max_offset_in_queue(RETRY, 0) == 1, "revived once"
        assert G in broker.subscription_groups.all(), "the revive's look-up created the group again"


def test_a_pop_from_a_group_that_does_not_exist_is_refused_with_auto_creation_off() -> None:
    """Upstream PopMessageProcessor: SUBSCRIPTION_GROUP_NOT_EXIST, nothing popped; the group created, it pops."""
    with pop_broker(queues=1) as (broker, _clock, _sink):
        broker.send(Message(T, b"x", 0, tags="A"))
        apply_settings(broker, {"autoCreateSubscriptionGroup": False})
        with pytest.raises(InvalidRequest) as refused:
            pop_one(broker)
        assert (refused.value.code, refused.value.field) == (SUBSCRIPTION_GROUP_NOT_EXIST, "consumerGroup")
        broker.subscription_groups.update({"groupName": G, "consumeEnable": True})
        pop_one(broker)


def test_a_heartbeat_creates_its_group_and_the_table_survives_a_restart(tmp_path) -> None:  # type: ignore[no-untyped-def]
    clock = SimClock()
    broker = Broker(tmp_path, clock)
    broker.start()
    broker.heartbeat(RecordingChannel("ch"), "c1", [ConsumerData("HbG", (SubscriptionData.parse(T, "*"),))])
    broker.subscription_groups.update({"groupName": "OpG", "retryMaxTimes": 3})
    broker.shutdown()
    again = Broker(tmp_path, clock)
    assert sorted(again.subscription_groups.all()) == ["HbG", "OpG"]
    assert again.subscription_groups.all()["OpG"]["retryMaxTimes"] == 3
    again.config.auto_create_subscription_group = False
    assert again.subscription_groups.find("Other") is None
    again.shutdown()
