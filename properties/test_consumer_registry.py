"""Consumer registry (CGRP): change detection fires exactly when seed 001 §6 says, and every
remaining member is notified, on random heartbeat / unregister / close / silence schedules."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from reference.broker.config import BrokerConfig
from reference.broker.consumer_manager import ClientChannelInfo, ConsumerManager
from reference.broker.protocol import ConsumerData, RecordingChannel
from reference.clock import SimClock
from reference.rules.filter import SubscriptionData

KEYS = ("conn-1", "conn-2", "conn-3")
CLIENTS = ("10.0.0.1@1", "10.0.0.2@2", "10.0.0.3@3")
GROUPS = ("G1", "G2")
#: Most operations hit one group, so that groups with several members (and their notifications) are common.
GROUP_CHOICE = st.sampled_from(("G1", "G1", "G1", "G2"))
TOPICS = ("T1", "T2", "T3")


@dataclass(frozen=True)
class Heartbeat:
    key: str
    client_id: str
    group: str
    subs: tuple[tuple[str, int], ...]  # (topic, subVersion)


@dataclass(frozen=True)
class Unregister:
    key: str
    group: str


@dataclass(frozen=True)
class Close:
    key: str


@dataclass(frozen=True)
class Silence:
    ms: int


subs = st.dictionaries(st.sampled_from(TOPICS), st.integers(0, 3), max_size=3).map(lambda d: tuple(sorted(d.items())))
ops = st.lists(
    st.one_of(
        st.builds(Heartbeat, st.sampled_from(KEYS), st.sampled_from(CLIENTS), GROUP_CHOICE, subs),
        st.builds(Unregister, st.sampled_from(KEYS), GROUP_CHOICE),
        st.builds(Close, st.sampled_from(KEYS)),
        st.builds(Silence, st.sampled_from((10_000, 60_000, 125_000)) | st.integers(0, 200_000)),
    ),
    min_size=1,
    max_size=30,
)


class Model:
    """What seed 001 says the registry holds: group -> channel key -> (client id, last heartbeat)."""

    def __init__(self) -> None:
        self.channels: dict[str, dict[str, list]] = {}
        self.subs: dict[str, dict[str, int]] = {}

    def members(self, group: str) -> list[str]:
        return list(self.channels.get(group, {}))

    def remove(self, group: str, key: str) -> list[str]:
        """Remove a member; returns the keys to notify (the remaining members)."""
        self.channels[group].pop(key)
        if not self.channels[group]:
            del self.channels[group]
            self.subs.pop(group, None)
        return self.members(group)


def run_ops(schedule: list, manager_cls: type[ConsumerManager]) -> None:
    clock = SimClock()
    config = BrokerConfig()
    manager = manager_cls(config, clock)
    manager.start()
    chans = {k: RecordingChannel(k) for k in KEYS}
    model = Model()
    start = clock.now_ms()
    expected_notes = {k: 0 for k in KEYS}

    def notify(keys: list[str]) -> None:
        for k in keys:
            expected_notes[k] += 1

    for i, op in enumerate(schedule):
        if isinstance(op, Heartbeat):
            sub_list = tuple(SubscriptionData.parse(t, "*", v) for t, v in op.subs)
            members = model.channels.setdefault(op.group, {})
            stored = model.subs.setdefault(op.group, {})
            new_channel = op.key not in members
            topics_changed = set(stored) != {t for t, _ in op.subs}
            members[op.key] = [op.client_id, clock.now_ms()]
            for t, v in op.subs:
                if t not in stored or v > stored[t]:
                    stored[t] = v
            for t in [t for t in stored if t not in dict(op.subs)]:
                del stored[t]
            changed = manager.register_consumer(
                ClientChannelInfo(chans[op.key], op.client_id), ConsumerData(op.group, sub_list)
            )
            expect = new_channel or topics_changed
            assert changed == expect, f"op {i} {op}: change reported {changed}, seed 001 says {expect}"
            if expect:
                notify(model.members(op.group))
        elif isinstance(op, Unregister):
            present = op.key in model.channels.get(op.group, {})
            removed = manager.unregister_consumer(op.group, chans[op.key])
            assert removed == present, f"op {i} {op}: unregister returned {removed}"
            if present:
                notify(model.remove(op.group, op.key))
        elif isinstance(op, Close):
            for group in list(model.channels):
                if op.key in model.channels[group]:
                    notify(model.remove(group, op.key))
            manager.do_channel_close_event(chans[op.key])
        else:
            target = clock.now_ms() + op.ms
            interval = config.channel_scan_interval_ms
            k = (clock.now_ms() - start) // interval + 1
            while start + k * interval <= target:
                scan_at = start + k * interval
                for group in list(model.channels):
                    for key, (_, last) in list(model.channels[group].items()):
                        if scan_at - last > config.channel_expired_timeout_ms:
                            notify(model.remove(group, key))
                k += 1
            clock.run_until(target)
        note(f"after op {i} {op}: model {model.channels}")
        for group in GROUPS:
            info = manager.get_consumer_group_info(group)
            actual = {k: v.client_id for k, v in info.channel_info_table.items()} if info else {}
            assert actual == {k: v[0] for k, v in model.channels.get(group, {}).items()}, f"op {i}: members of {group}"
            topics = set(info.subscription_table) if info else set()
            assert topics == set(model.subs.get(group, {})), f"op {i}: subscriptions of {group}"
            expected_ids = sorted({v[0] for v in model.channels.get(group, {}).values()})
            assert manager.consumer_ids(group) == expected_ids
        actual_notes = {k: len(c.notifications) for k, c in chans.items()}
        assert actual_notes == expected_notes, f"op {i} {op}: notifications {actual_notes}, expected {expected_notes}"


def registry_property(manager_cls: type[ConsumerManager]):
    @given(schedule=ops)
    def prop(schedule: list) -> None:
        run_ops(schedule, manager_cls)

    return prop


@pytest.mark.req("CGRP-1", "CGRP-2.change", "CGRP-2.stored", "CGRP-3.no-change", "CGRP-4.clustering",
                 "CGRP-5.clustering", "CGRP-6.closed", "CGRP-6.expiry", "CGRP-8", "CGRP-7")
def test_registry_change_detection_property() -> None:
    registry_property(ConsumerManager)()
