"""``mqtck bench strategy`` reports both figures with the parameters it ran with."""

from __future__ import annotations

import json

import pytest

from conformance.cli import main


def test_bench_strategy_reports_examples_and_requests_per_second(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["bench", "strategy", "--strategy", "by_circle", "--examples", "10", "--requests", "300"]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)["result"]
    assert result["parameters"] == {"strategy": "by_circle", "examples_per_property": 10, "requests": 300,
                                    "exec": "python -m conformance.strategy.serve by_circle", "seed": 0}
    assert result["python"]["passed"] and result["python"]["examples"] == 10 * result["python"]["properties"]
    assert result["python"]["examples_per_s"] > 0
    assert result["exec"]["requests_per_s_one_at_a_time"] > 0 and result["exec"]["requests_per_s_pipelined"] > 0
