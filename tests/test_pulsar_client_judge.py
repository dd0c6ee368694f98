"""The Pulsar client peers' judge (conformance/peers/pulsar_clients.py) on trace rows written here: FLOW-7 passes
only when each consumer's first FLOW is its receiver queue and every later one half of it, FLOW-8 only when the
nacked message was dispatched once more per nack. The real clients meet it in tests/peers/test_pulsar_peer.py."""

from __future__ import annotations

from typing import Any

from conformance.peers.pulsar_clients import FLOW_SUBSCRIPTION, NACK_SUBSCRIPTION, judge
from conformance.peers.pulsar_observe import CONSUMERS, NACKS, QUEUE, RoundTrip


def rows(first: int = QUEUE, later: int = QUEUE // 2, nacked_dispatches: int = NACKS + 1) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(CONSUMERS):
        out += [{"event": "FLOW", "group": FLOW_SUBSCRIPTION, "client_id": f"c{i}#conn-1/{i}", "count": first}]
        out += [{"event": "FLOW", "group": FLOW_SUBSCRIPTION, "client_id": f"c{i}#conn-1/{i}", "count": later}] * 8
    out.append({"event": "FLOW", "group": NACK_SUBSCRIPTION, "client_id": "n0#conn-1/3", "count": first})
    out += [{"event": "DISPATCH", "group": NACK_SUBSCRIPTION, "client_id": "n0#conn-1/3", "msg_id": "M1"}] * \
        nacked_dispatches
    out.append({"event": "DISPATCH", "group": FLOW_SUBSCRIPTION, "client_id": "c0#conn-1/0", "msg_id": "M0"})
    return out


def verdicts(trace: list[dict[str, Any]]) -> dict[str, str]:
    return {entry["id"]: entry["status"] for entry in judge(trace, RoundTrip("t", "n"))}


def test_a_client_that_grants_its_queue_then_half_and_asks_again_passes() -> None:
    assert verdicts(rows()) == {"FLOW-7": "pass", "FLOW-8": "pass"}


def test_a_first_grant_other_than_the_receiver_queue_fails_flow_7() -> None:
    assert verdicts(rows(first=1000))["FLOW-7"] == "fail"


def test_refills_of_one_permit_at_a_time_fail_flow_7() -> None:
    assert verdicts(rows(later=1))["FLOW-7"] == "fail"


def test_a_nack_never_asked_for_again_fails_flow_8() -> None:
    assert verdicts(rows(nacked_dispatches=1)) == {"FLOW-7": "pass", "FLOW-8": "fail"}


def test_missing_consumers_fail_flow_7() -> None:
    trace = [row for row in rows() if not str(row.get("client_id", "")).startswith("c2#")]
    assert verdicts(trace)["FLOW-7"] == "fail"
