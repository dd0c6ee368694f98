"""``mqtck bench pop-wake`` on the reference: every held receive is woken by its send and reported (no timing is
asserted: the figures are the bench's, docs/grpc.md)."""

from __future__ import annotations

import argparse

import pytest

from conformance.bench import pop_wake
from conformance.cliargs import UsageError


def _args(**given: object) -> argparse.Namespace:
    return argparse.Namespace(**{"rounds": 3, "target": [], "peer": [], "no_reference": False, **given})


def test_every_held_receive_is_woken_by_its_send_and_the_percentiles_are_reported() -> None:
    """The reference made through the grpc target (its topic and consumer by their wire names) is woken every
    round."""
    result = pop_wake.run(_args())
    ref = result["targets"]["reference"]
    assert (ref["woken"], ref["not_woken"]) == (3, 0)
    assert 0 < ref["p50_ms"] <= ref["p99_ms"] <= ref["max_ms"]


def test_the_summary_takes_the_median_the_99th_percentile_and_counts_the_late_and_the_lost() -> None:
    latencies = [float(ms) for ms in range(1, 201)] + [1_500.0]
    figures = pop_wake.summary("e", latencies, lost=2)
    assert figures == {"endpoint": "e", "woken": 201, "late": 1, "not_woken": 2, "p50_ms": 101.0,
                       "p99_ms": 199.0, "max_ms": 1_500.0}
    assert pop_wake.summary("e", [], lost=3)["p50_ms"] is None
    assert pop_wake.summary("e", [4.0, 2.0], lost=0)["p99_ms"] == 4.0  # under 100 rounds: the largest


@pytest.mark.parametrize("target", ["grpc://127.0.0.1:1", "x=http://127.0.0.1:1", "x=grpc://127.0.0.1:1"])
def test_a_target_that_is_not_label_equals_a_grpc_url_with_its_name_server_is_refused(target: str) -> None:
    with pytest.raises(UsageError, match=r"LABEL=grpc://HOST:PORT\?remoting=HOST:PORT"):
        pop_wake.run(_args(target=[target], no_reference=True))


@pytest.mark.parametrize(("peer", "rule"), [("rocketmq-5.5.0", "not a proxy"), ("no-such-peer", "--peer")])
def test_a_peer_that_is_not_a_proxy_of_the_catalogue_is_refused(peer: str, rule: str) -> None:
    with pytest.raises(UsageError, match=rule):
        pop_wake.run(_args(peer=[peer], no_reference=True))
