"""A permit consumer that subscribes again says so in its observation (``again``), so that an expectations file can
excuse exactly that case: Pulsar answers a SUBSCRIBE for a consumer id already on the connection with SUCCESS, the
reference refuses a client id already subscribed (docs/pulsar-peer.md, "The reference against the real Pulsar")."""

from __future__ import annotations

from pathlib import Path

from conformance.diff.compare import compare, rules_for
from conformance.diff.runner import open_pair
from conformance.diff.steps import PermitSubscribe, Side


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
