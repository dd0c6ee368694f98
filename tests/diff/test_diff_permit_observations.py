"""What the permit steps say beside their answers, so that an expectations file can excuse exactly the cases where
implementations differ (docs/pulsar-peer.md, "The reference against the real Pulsar"): a consumer that subscribes
again (``again``: Pulsar answers a SUBSCRIBE for a consumer id already on the connection with SUCCESS, the reference
refuses a client id already subscribed), and a Failover subscription with a choice of active consumer (``failover``:
FLOW-4's smallest client id, Pulsar's hash ring)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.diff.compare import compare, rules_for
from conformance.diff.runner import open_pair
from conformance.diff.settings import settings_for
from conformance.diff.steps import PermitFlow, PermitSubscribe, Side


def test_a_second_subscribe_of_the_same_consumer_is_marked_again(tmp_path: Path) -> None:
    a, b = open_pair("reference", "reference", tmp_path)
    try:
        side = Side(a, "t-", (1,))
        a.create_topic(side.topic(0), 1)
        first = PermitSubscribe(consumer=0, sub_type="Exclusive").run(side, 0)
        other = PermitSubscribe(consumer=1, sub_type="Exclusive").run(side, 1)
        again = PermitSubscribe(consumer=0, sub_type="Shared").run(side, 2)
    finally:
        a.close()
        b.close()
    assert first == {"subscribed": True}
    assert other == {"refused": "subType"}  # another consumer of an exclusive subscription: not "again"
    assert again == {"again": True, "refused": "subType"}


def test_pulsars_rule_excuses_a_subscribe_again_and_nothing_else() -> None:
    rules = rules_for("pulsar-4.0.7")
    for refused in ("consumerName", "subType"):
        excused = compare("permit_subscribe", {"again": True, "subscribed": True}, {"again": True, "refused": refused},
                          rules)
        assert excused.fields == () and [r.id for r in excused.excused] == ["FLOW-4"]
    second = compare("permit_subscribe", {"subscribed": True}, {"refused": "subType"}, rules)
    assert second.fields == ("refused", "subscribed")


def test_a_flow_on_a_failover_subscription_with_two_consumers_is_marked_failover(tmp_path: Path) -> None:
    a, b = open_pair("reference", "reference", tmp_path)
    try:
        side = Side(a, "t-", (1,))
        a.create_topic(side.topic(0), 1)
        PermitSubscribe(consumer=0, sub_type="Failover").run(side, 0)
        alone = PermitFlow(consumer=0, permits=1, batch=1).run(side, 1)
        PermitSubscribe(consumer=1, sub_type="Failover").run(side, 2)
        chosen = PermitFlow(consumer=0, permits=1, batch=1).run(side, 3)
    finally:
        a.close()
        b.close()
    assert "failover" not in alone and alone["dispatched"] == [[0, 0, "s1m0;", 0]]
    assert chosen == {"failover": True, "permits": 0, "dispatched": [[1, 0, "s3m0;", 0]]}


def test_pulsars_failover_rules_excuse_the_active_consumer_only_on_a_failover_choice() -> None:
    rules = rules_for("pulsar-4.0.7")
    pulsar = {"failover": True, "permits": 1, "dispatched": []}
    reference = {"failover": True, "permits": 0, "dispatched": [[0, 0, "s3m0;", 0]]}
    assert compare("permit_flow", pulsar, reference, rules).fields == ()
    pulsar.pop("failover"), reference.pop("failover")
    assert compare("permit_flow", pulsar, reference, rules).fields == ("dispatched", "permits")


@pytest.mark.req("FLOW-11")
@pytest.mark.parametrize(("per_entry", "sent"), [(False, 3), (True, 4)])
def test_the_reference_reads_entries_per_permit_as_pulsar_when_told(tmp_path: Path, per_entry: bool, sent: int) -> None:
    """pulsar-4.0.7.toml's [[reference]] entry: with 3 permits and entries of 2, 1 and 1 messages queued, the strict
    reference sends 3 messages (no entry started at 0 permits, FLOW-11), and reading entries per permit, as Pulsar's
    calculateToRead does, 4 (the third entry started at 0: permits -1)."""
    settings = {"permit_read_entries_per_permit": True} if per_entry else {}
    assert settings_for("pulsar-4.0.7") == {"permit_read_entries_per_permit": True}
    a, b = open_pair("reference", "reference", tmp_path, settings)
    try:
        a.create_topic("T", 1)
        a.send_batch("T", 0, [b"e0m0", b"e0m1"])
        a.send("T", 0, b"e1")
        a.send("T", 0, b"e2")
        a.send("T", 0, b"e3")
        a.subscribe_permits("G", "T", "p0", "Exclusive")
        a.flow("G", "p0", "T", 3)
        dispatched = [r.body for r in a.dispatched("G", "p0", "T")]
        permits = a.permits("G", "p0", "T")
    finally:
        a.close()
        b.close()
    assert dispatched == [b"e0m0", b"e0m1", b"e1", b"e2"][:sent] and permits == 3 - sent
