"""The reference's ACL 1.0 against Apache RocketMQ 4.9.7's (issue 20, access control): both brokers run with
``fixtures/acl/plain_acl.yml`` (the real one with ``aclEnable=true``), every case of ``tests/acl_cases.py`` is sent
to both with the same credentials, and both must let through and refuse the same requests with the same response
code and reason. This is what makes the reference's ACL RocketMQ's, signature bytes included."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.expectations import load
from conformance.peers import peer_info
from conformance.peers.rocketmq import RocketMQPeer
from conformance.targets.launch import launch_broker
from conformance.targets.remoting import discover_broker
from reference.net.remoting.client import RemotingClient
from reference.rules.codes import ResponseCode
from tests.acl_cases import ACL_FILE, Case, cases, prepare, run_case

PEER = "rocketmq-4.9.7"


@pytest.fixture(scope="module")
def real_broker() -> Iterator[str]:
    with RocketMQPeer(peer_info(PEER), acl_file=ACL_FILE) as peer:
        prepare(peer.broker_address)
        yield peer.broker_address


@pytest.fixture(scope="module")
def reference_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data: Path = tmp_path_factory.mktemp("acl") / "data"
    broker = launch_broker("remoting", data, "--acl", str(ACL_FILE))
    try:
        address = discover_broker(broker.address)
        prepare(address)
        yield address
    finally:
        broker.stop()


def _verdict(address: str, case: Case) -> tuple[bool, int, str]:
    client = RemotingClient(address)
    try:
        response = run_case(client, case)
    finally:
        client.close()
    remark = response.remark or ""
    return response.code == ResponseCode.SYSTEM_ERROR and "AclException: " in remark, response.code, remark


@pytest.mark.req("ACL-1", "ACL-2", "ACL-3", "ACL-4", "ACL-5")
@pytest.mark.parametrize("case", cases(), ids=lambda c: c.name)
def test_the_reference_refuses_what_rocketmq_4_9_7_refuses(real_broker: str, reference_broker: str,
                                                          case: Case) -> None:
    real = _verdict(real_broker, case)
    ours = _verdict(reference_broker, case)
    assert ours[0] == (case.refused is not None), f"the reference does not do what the case says: {ours}"
    deviation = load(PEER).entries.get(case.req or "")
    if deviation is not None:
        # A reviewed deviation: RocketMQ lets through what the reference refuses. Asserted, so that the entry is
        # removed the day the broker changes.
        assert not real[0] and ours[0], f"{case.req} is listed as a deviation of {PEER} but {real}"
        return
    assert real[0] == ours[0], f"reference {ours}, RocketMQ {real}"
    if case.refused is not None:
        assert ours[1] == real[1], f"refusal codes differ: reference {ours[1]}, RocketMQ {real[1]}"
        assert case.refused in real[2] and case.refused in ours[2], (ours[2], real[2])
