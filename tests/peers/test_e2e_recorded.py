"""A real deployment recorded off the wire and audited (issue 18, ``mqtck bench e2e``): Apache RocketMQ 4.9.7 and
5.5.0 from Maven Central behind ``mqtck record``, a producer and three push consumers of an official client (the Java
rocketmq-client 4.9.8, or the Go rocketmq-client-go v2.1.2 built from ``conformance/peers/go_client``), one
consumer killed with SIGKILL mid-stream and a fourth added later. The audit of the merged trace (the recorder's
broker view and the consumers' own rows) must find no lost message and no MUST violation, and every duplicate
must have a cause (:func:`tests.e2e_check.run_e2e`, shared with the C++ run in tests/interop). A short run here;
the 100,000-message figures are in docs/audit.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e_check import BROKERS, run_e2e

MESSAGES, RATE = 20_000, 1_000


@pytest.mark.req("ALO-1", "ALO-3", "REBAL-5")
@pytest.mark.parametrize("broker", BROKERS)
def test_a_recorded_java_deployment_with_a_kill_audits_clean(tmp_path: Path, broker: str) -> None:
    result = run_e2e(tmp_path, "--peer", broker, messages=MESSAGES, rate=RATE)
    assert result["params"]["client"] == "rocketmq-client 4.9.8"
    assert result["params"]["peer"] == broker


@pytest.mark.req("ALO-1", "ALO-3", "REBAL-5")
@pytest.mark.parametrize("broker", BROKERS)
def test_a_recorded_go_deployment_with_a_kill_audits_clean(tmp_path: Path, broker: str) -> None:
    result = run_e2e(tmp_path, "--client", "go", "--peer", broker, messages=MESSAGES, rate=RATE)
    assert result["params"]["client"] == "rocketmq-client-go v2.1.2"
    assert result["params"]["peer"] == broker
