"""CGRP and INPUT-3 requirements through the Target interface."""

from __future__ import annotations

import time
from typing import Any

import pytest

from conformance.targets import GroupInfoTarget, Target, TargetError

#: How long a notification may take to cross loopback after the request that caused it was answered.
NOTIFY_WAIT_S = 3.0

pytestmark = pytest.mark.needs("consumer_registry")


@pytest.mark.req("CGRP-1", "CGRP-4.clustering", "CGRP-7")
def test_join_notifies_every_member(target: Target) -> None:
    target.create_topic("RT", 2)
    assert target.heartbeat("c1", "client-1", "G", {"RT": "*"}) is True
    assert target.heartbeat("c2", "client-2", "G", {"RT": "*"}) is True
    assert target.consumer_ids("G") == ["client-1", "client-2"]
    assert target.notifications("c1") == ["G", "G"] and target.notifications("c2") == ["G"]


@pytest.mark.req("CGRP-2.change", "CGRP-3.no-change")
def test_what_counts_as_a_change(target: Target) -> None:
    target.create_topic("RT", 1)
    target.create_topic("RU", 1)
    target.heartbeat("c1", "client-1", "G", {"RT": "*"})
    assert target.heartbeat("c1", "client-1", "G", {"RT": "*"}) is False, "same heartbeat again"
    assert target.heartbeat("c1", "client-1", "G", {"RT": "A"}, sub_version=5) is False, "newer subVersion"
    assert target.heartbeat("c1", "client-1b", "G", {"RT": "A"}, sub_version=5) is False, "another client id"
    assert target.heartbeat("c1", "client-1", "G", {"RT": "*", "RU": "*"}) is True, "topic added"
    assert target.heartbeat("c1", "client-1", "G", {"RU": "*"}) is True, "topic dropped"
    assert notified(target, "c1", 4) == ["G", "G", "G"], "notified once per change: the join, the add, the drop"


@pytest.mark.req("CGRP-2.stored", "CGRP-3.stored")
@pytest.mark.needs("group_info")
def test_the_group_stores_what_its_heartbeats_subscribe(target: GroupInfoTarget) -> None:
    """What the broker keeps of the group (RocketMQ's ConsumerGroupInfo, shown by GET_CONSUMER_CONNECTION_LIST):
    a newer subVersion replaces the stored subscription and an older one does not; a channel's new client id
    replaces its old one; an added topic is stored and a dropped one removed."""
    target.create_topic("RT", 1)
    target.create_topic("RU", 1)
    target.heartbeat("c1", "client-1", "G", {"RT": "*"}, sub_version=1)
    assert stored(target, "G") == (("client-1",), {"RT": ("*", 1)})
    target.heartbeat("c1", "client-1", "G", {"RT": "A"}, sub_version=5)
    assert stored(target, "G")[1] == {"RT": ("A", 5)}, "CGRP-3: a newer subVersion replaces the subscription"
    target.heartbeat("c1", "client-1", "G", {"RT": "B"}, sub_version=3)
    assert stored(target, "G")[1] == {"RT": ("A", 5)}, "CGRP-3: an older subVersion does not"
    target.heartbeat("c1", "client-1b", "G", {"RT": "A"}, sub_version=5)
    assert stored(target, "G")[0] == ("client-1b",), "CGRP-3: the channel's new client id replaces its old one"
    target.heartbeat("c1", "client-1b", "G", {"RT": "A", "RU": "*"}, sub_version=5)
    assert stored(target, "G")[1] == {"RT": ("A", 5), "RU": ("*", 5)}, "CGRP-2: an added topic is stored"
    target.heartbeat("c1", "client-1b", "G", {"RU": "*"}, sub_version=5)
    assert stored(target, "G")[1] == {"RU": ("*", 5)}, "CGRP-2: a dropped topic is removed"


def stored(target: GroupInfoTarget, group: str) -> tuple[tuple[str, ...], dict[str, tuple[str, int]]]:
    """The group's members and stored subscriptions, as the broker keeps them."""
    info = target.group_info(group)
    assert info is not None, f"the broker keeps no group {group}"
    return info.client_ids, dict(info.subscriptions)


@pytest.mark.req("CGRP-4.broadcasting", "CGRP-5.broadcasting")
def test_a_broadcasting_group_is_notified_of_joins_and_unregisters(target: Target) -> None:
    """Seed 001 fires the group's CHANGE on a join and on an unregister whatever its message model; every other test
    uses clustering groups."""
    target.create_topic("RB", 1)
    target.heartbeat("b1", "client-1", "GB", {"RB": "*"}, model="BROADCASTING")
    target.heartbeat("b2", "client-2", "GB", {"RB": "*"}, model="BROADCASTING")
    assert target.consumer_ids("GB") == ["client-1", "client-2"]
    told = notified(target, "b1", 2)
    assert told == ["GB", "GB"], f"a broadcasting member was told {told} of its own and another's join"
    target.unregister("b2", "GB")
    assert target.consumer_ids("GB") == ["client-1"]
    told = notified(target, "b1", 3)
    assert told[2:] == ["GB"], f"the remaining broadcasting member was told {told[2:]} of an unregister"


def notified(target: Target, conn: str, count: int) -> list[str]:
    """``conn``'s notifications once it has ``count`` (over a wire they cross loopback after the answer), or as
    they are after the wait any notification needs."""
    deadline = time.monotonic() + (0 if "clock_control" in target.capabilities else NOTIFY_WAIT_S)
    while len(target.notifications(conn)) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return target.notifications(conn)


@pytest.mark.req("CGRP-5.clustering")
def test_unregister_notifies_the_rest(target: Target) -> None:
    """The joins' notifications are let in before the count is taken: over a wire they may arrive after the answer,
    and a late join notification counted as the unregister's once passed a broker that sends none (rocketmq-rust)."""
    target.create_topic("RT", 1)
    target.heartbeat("c1", "client-1", "G", {"RT": "*"})
    target.heartbeat("c2", "client-2", "G", {"RT": "*"})
    before = len(notified(target, "c1", 2))
    target.unregister("c2", "G")
    assert target.consumer_ids("G") == ["client-1"]
    told = notified(target, "c1", before + 1)[before:]
    assert told == ["G"], f"the remaining member was told {told} of an unregister"


@pytest.mark.req("CGRP-5.removed")
@pytest.mark.needs("group_info")
def test_the_last_unregister_removes_the_group(target: GroupInfoTarget) -> None:
    target.create_topic("RT", 1)
    target.heartbeat("c1", "client-1", "GE", {"RT": "*"})
    target.heartbeat("c2", "client-2", "GE", {"RT": "*"})
    target.unregister("c2", "GE")
    info = target.group_info("GE")
    assert info is not None and info.client_ids == ("client-1",), f"one member left: {info}"
    target.unregister("c1", "GE")
    assert target.group_info("GE") is None, "the group is kept after its last member unregistered"


def _silence_client_2(target: Target) -> int:
    """Two members; client-1 beats every 10 s for 130 s, client-2 falls silent: client-1's notifications before."""
    target.create_topic("RT", 1)
    target.heartbeat("c1", "client-1", "G", {"RT": "*"})
    target.heartbeat("c2", "client-2", "G", {"RT": "*"})
    before = len(target.notifications("c1"))
    for _ in range(13):
        target.advance(10_000)
        target.heartbeat("c1", "client-1", "G", {"RT": "*"})
    return before


@pytest.mark.req("CGRP-6.expiry")
@pytest.mark.needs("clock_control")
def test_silent_channel_expires(target: Target) -> None:
    _silence_client_2(target)
    assert target.consumer_ids("G") == ["client-1"], "a channel silent for > 120 s must be removed"


@pytest.mark.req("CGRP-8")
@pytest.mark.needs("clock_control")
def test_the_members_are_told_when_a_silent_channel_expires(target: Target) -> None:
    before = _silence_client_2(target)
    assert target.consumer_ids("G") == ["client-1"], "a channel silent for > 120 s must be removed"
    assert target.notifications("c1")[before:] == ["G"], "the remaining member must be told of the expiry"


@pytest.mark.req("INPUT-3")
def test_bad_heartbeats_are_refused(target: Target) -> None:
    target.create_topic("RT", 1)
    refused: list[tuple[tuple[str, str, str, dict[str, str]], dict[str, Any], str]] = [
        (("c1", "", "G", {"RT": "*"}), {}, "clientID"),
        (("c1", "client-1", "", {"RT": "*"}), {}, "consumerData.groupName"),
        (("c1", "client-1", "G", {"RT": "*"}), {"model": "SOMETIMES"}, "consumerData.messageModel"),
        (("c1", "client-1", "G", {"RT": "||"}), {}, "expression"),
    ]
    for args, kwargs, field in refused:
        with pytest.raises(TargetError) as err:
            target.heartbeat(*args, **kwargs)
        assert err.value.field == field
    assert target.consumer_ids("G") == [] and target.notifications("c1") == []
