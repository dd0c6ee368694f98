"""``mqtck bench pop-wake`` on the reference: every held receive is woken by its send and reported (no timing is
asserted: the figures are the bench's, docs/grpc.md)."""

from __future__ import annotations

import argparse

import pytest

from conformance.bench import pop_wake
from conformance.cliargs import UsageError


def test_every_held_receive_is_woken_by_its_send_and_the_percentiles_are_reported() -> None:
    result = pop_wake.run(argparse.Namespace(rounds=3, target=[], no_reference=False))
    ref = result["targets"]["reference"]
    assert (ref["woken"], ref["not_woken"]) == (3, 0)
    assert 0 < ref["p50_ms"] <= ref["p99_ms"] <= ref["max_ms"]


@pytest.mark.parametrize(("target", "rule"), [("grpc://127.0.0.1:1", "LABEL=grpc://HOST:PORT"),
                                              ("x=http://127.0.0.1:1", "LABEL=grpc://HOST:PORT")])
def test_a_target_that_is_not_label_equals_a_grpc_url_is_refused(target: str, rule: str) -> None:
    with pytest.raises(UsageError, match=rule):
        pop_wake.run(argparse.Namespace(rounds=3, target=[target], no_reference=True))
