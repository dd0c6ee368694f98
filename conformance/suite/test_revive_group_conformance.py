"""The revive's group check (seed 004 lines 1111-1115; REVIVE-9, REVIVE-10), through the Target interface.

A due checkpoint whose consumer group has no subscription group config is skipped: nothing is revived and the revive
offset moves past it. Whether a deleted group has a config when its checkpoint falls due is the broker's setting
``autoCreateSubscriptionGroup``: upstream's findSubscriptionGroupConfig creates a missing group while it is on (its
default), so the seed's skip shows only with it off (REVIVE-9), and on a default broker the deleted group's
checkpoint is revived (REVIVE-10, upstream's code).

Two groups pop the same message without acknowledging it, and one of them is deleted (DELETE_SUBSCRIPTIONGROUP,
``mqadmin deleteSubGroup``; its offsets stay). The kept group's revived message shows the revive ran; then the
deleted group is created again and popped: its message comes back from the retry topic only if its checkpoint was
revived.
"""

from __future__ import annotations

import time

import pytest

from conformance.suite.support import Settings, answered
from conformance.suite.test_pop_conformance import REVIVE_DELAY_MS, clocked, send_n, wait_for_redelivery
from conformance.targets import GroupAdminTarget, PoppedRecord, PopTarget, SettingsTarget


class GroupDeletingPopTarget(PopTarget, GroupAdminTarget, SettingsTarget):
    """A target with pop, group deletion and broker settings."""


pytestmark = pytest.mark.needs("pop", "group_admin", "broker_config")
#: The popped messages' invisible time: short, since the tests wait for the revive over the wire.
INVISIBLE_MS = 2_000
#: Pops of the re-created group: one pop in five reads the retry topic first, and any pop reads it when the topic
#: has nothing new for the group.
RETRY_LOOKS = 5


def deleted_group_after_revive(target: GroupDeletingPopTarget, topic: str, gone: str, kept: str) -> list[PoppedRecord]:
    """Both groups pop the topic's one message; ``gone`` is deleted; once ``kept``'s copy was revived (asserted), and
    as long again over the wire (the two checkpoints may sit in different revive queues), ``gone`` is created again:
    what its pops get from the retry topic."""
    target.create_topic(topic, 1)
    send_n(target, 0, 1, topic=topic)
    for group in (gone, kept):
        target.create_group(group)
        pending = target.pop(group, topic, -1, 32, INVISIBLE_MS, 0)
        assert answered(target, pending)
        assert len(pending.result().messages) == 1, f"the first pop of {group} gets the message"
    target.delete_group(gone)
    started = time.monotonic()
    _, revived = wait_for_redelivery(target, INVISIBLE_MS + REVIVE_DELAY_MS + 1_000, group=kept, topic=topic)
    assert [m.retry for m in revived] == [True], f"the kept group's message must be revived: {revived}"
    if not clocked(target):
        target.advance(int((time.monotonic() - started) * 1000))
    target.create_group(gone)
    retried: list[PoppedRecord] = []
    for _ in range(RETRY_LOOKS):
        pending = target.pop(gone, topic, -1, 32, 60_000, 0)
        assert answered(target, pending)
        retried += [m for m in pending.result().messages if m.retry]
    return retried


@pytest.mark.req("REVIVE-9")
def test_a_checkpoint_of_a_deleted_group_revives_nothing(target: GroupDeletingPopTarget, settings: Settings) -> None:
    """Seed 004 lines 1111-1115: with autoCreateSubscriptionGroup off, a due checkpoint whose group was deleted is
    skipped: the group, created again later, finds nothing of it in its retry topic."""
    settings(autoCreateSubscriptionGroup=False)
    retried = deleted_group_after_revive(target, "PopGroupSkipT", "PopGroupGoneG", "PopGroupKeptG")
    assert retried == [], f"REVIVE-9: a checkpoint of the deleted group was revived: {[m.body for m in retried]}"


@pytest.mark.req("REVIVE-10")
def test_a_checkpoint_of_a_deleted_group_is_revived_with_auto_creation(target: GroupDeletingPopTarget,
                                                                       settings: Settings) -> None:
    """Upstream SubscriptionGroupManager.findSubscriptionGroupConfig (5.3.3): with autoCreateSubscriptionGroup on,
    the revive's look-up creates the deleted group again, so its checkpoint is revived like any other."""
    settings(autoCreateSubscriptionGroup=True)
    retried = deleted_group_after_revive(target, "PopGroupAutoT", "PopGroupAutoGoneG", "PopGroupAutoKeptG")
    assert [m.body for m in retried] == [b"q0-0"], f"REVIVE-10: the deleted group's message must be revived: {retried}"
