"""The official Java and Go v5 clients' kill-one runs, recorded through ``mqtck record --protocol grpc`` and audited
(issue 38's must-show; the run itself is :mod:`tests.peers.v5_killed_run`), against the reference (``mqtck broker
--remoting --grpc``) and the real proxy (``mqtck peer run rocketmq-proxy-5.5.0``). The Java client's consumers are
two PushConsumers; the Go client's (v5.1.2 has no PushConsumer) two SimpleConsumer processes, one SIGKILLed with its
batch held. The Python client's run is tests/peers/test_v5_recorded_python.py (its own tox env)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.peers.v5_killed_run import KillOne, run_killed_consumer

PLANS = {"java": KillOne.push("java-client-v5-5.2.0"), "go": KillOne.simple("go-client-v5-5.1.2")}


@pytest.mark.req("ALO-1", "PACK-1", "REVIVE-2.copy")
@pytest.mark.parametrize("kind", ["reference", "proxy"])
@pytest.mark.parametrize("client", sorted(PLANS))
def test_a_recorded_v5_run_with_a_killed_consumer_loses_nothing(client: str, kind: str, tmp_path: Path) -> None:
    numbers = run_killed_consumer(PLANS[client], kind, tmp_path)
    assert numbers["came_back"] and numbers["totals"]["lost"] == 0
