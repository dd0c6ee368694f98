"""The official Python v5 client's kill-one run (two PushConsumers of rocketmq-python-client 5.1.2, one SIGKILLed),
recorded through ``mqtck record --protocol grpc`` and audited, against the reference and the real proxy: issue 38's
must-show, the run of :mod:`tests.peers.v5_killed_run`. It runs in the ``interop-v5`` tox env only (the client's
package is named ``rocketmq``, as the RocketMQ 4 binding's is); the ``peers`` env leaves this file out."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.peers.v5_killed_run import KillOne, run_killed_consumer


@pytest.mark.req("ALO-1", "PACK-1", "REVIVE-2.copy")
@pytest.mark.parametrize("kind", ["reference", "proxy"])
def test_a_recorded_python_v5_run_with_a_killed_push_consumer_loses_nothing(kind: str, tmp_path: Path) -> None:
    numbers = run_killed_consumer(KillOne.push("python-client-v5-5.1.2"), kind, tmp_path)
    assert numbers["came_back"] and numbers["totals"]["lost"] == 0
