"""What the permit steps say beside their answers, so that an expectations file can excuse exactly the cases where
implementations differ (docs/pulsar-peer.md, "The reference against the real Pulsar"): a consumer that subscribes
again (``again``: Pulsar answers a SUBSCRIBE for a consumer id already on the connection with SUCCESS, the reference
refuses a client id already subscribed), and a Failover subscription with a choice of active consumer (``failover``:
FLOW-4's smallest client id, Pulsar's hash ring)."""

from __future__ import annotations

from pathlib import Path

from conformance.diff.compare import compare, rules_for
from conformance.diff.runner import open_pair
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
