"""A strategy that gives every queue to one consumer passes validity and partition; without a declared bound
balance is only measured, so ``mqtck strategy check`` must say how bad it is and how to gate on it."""

from __future__ import annotations

import json

import pytest

from conformance.cli import main

THIS = "tests.allocation.test_alloc_balance_hint"


class FirstTakesAll:
    """The first consumer of the group takes every queue; the others idle."""

    name = "FIRST_TAKES_ALL"

    def allocate(self, consumer_group, current_cid, mq_all, cid_all):  # type: ignore[no-untyped-def]
        return list(mq_all) if cid_all and current_cid == cid_all[0] else []


def _balance(capsys: pytest.CaptureFixture[str]) -> dict:
    report = json.loads(capsys.readouterr().out)
    return next(p for p in report["properties"] if p["name"] == "balance")


def test_all_queues_to_one_consumer_is_named_and_the_gate_is_suggested(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["strategy", "check", f"{THIS}:FirstTakesAll", "--examples", "40", "--json"]) == 0
    balance = _balance(capsys)
    assert balance["status"] == "reported"
    assert "maximally unbalanced" in balance["observation"]
    assert "--balance-bound N" in balance["observation"]


def test_an_even_strategy_gets_no_such_hint(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["strategy", "check", "averagely", "--balance-bound", "3", "--examples", "40", "--json"]) == 0
    assert "maximally unbalanced" not in (_balance(capsys)["observation"] or "")


def test_with_a_bound_the_same_strategy_fails_on_balance(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["strategy", "check", f"{THIS}:FirstTakesAll", "--examples", "40", "--balance-bound", "1",
                 "--json"]) == 1
    balance = _balance(capsys)
    assert balance["status"] == "fail"
    assert "maximally unbalanced" not in (balance["observation"] or "")
