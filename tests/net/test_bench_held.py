"""``mqtck bench held``: held pulls over both wires, every one woken by its queue's message, with the figures
the load goals are judged by (the full run's numbers are in the issue's note)."""

from __future__ import annotations

import json

import pytest

from conformance.cli import main


def test_bench_held_wakes_every_held_pull_over_both_wires(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["bench", "held", "--http", "60", "--remoting", "60", "--queues", "6", "--suspend-ms", "30000",
            "--idle-connections", "20"]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)["result"]
    for transport in ("http", "remoting"):
        figures = result[transport]
        assert figures["asked"] == figures["held"] == figures["answered_with_message"] == 60, figures
        assert figures["never"] == 0 and figures["wake_ms"]["max"] is not None, figures
        assert figures["broker_rss_peak_mib"] and figures["broker_rss_peak_mib"] < figures["rss_goal_mib"], figures
    assert result["remoting"]["idle_connections"] == 20 and result["remoting"]["answered_before_the_send"] == 0
