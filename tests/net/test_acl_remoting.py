"""RocketMQ ACL 1.0 on ``mqtck broker --remoting --acl FILE`` (issue 20, access control), over a real socket: every
case of ``tests/acl_cases.py`` is let through or refused as RocketMQ 4.9.7 does (the same cases run against the
real broker in ``tests/peers/test_acl_rocketmq.py``), a refusal leaks nothing and changes nothing, the name
server stays open, white-listed addresses skip the signature, and a bad ACL file is a usage error."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.targets.launch import LaunchedBroker, launch_broker
from conformance.targets.remoting import discover_broker
from reference.net.remoting.client import RemotingClient
from reference.net.remoting.command import RequestCode
from reference.rules.codes import ResponseCode
from tests.acl_cases import (
    ACL_FILE,
    GET_ROUTEINFO_BY_TOPIC,
    USER,
    cases,
    prepare,
    pull_fields,
    run_case,
    send_fields,
)

pytestmark = pytest.mark.slow


@pytest.fixture
def acl_broker(tmp_path: Path) -> Iterator[tuple[LaunchedBroker, str]]:
    broker = launch_broker("remoting", tmp_path / "data", "--acl", str(ACL_FILE))
    try:
        address = discover_broker(broker.address)
        prepare(address)
        yield broker, address
    finally:
        assert "Traceback" not in broker.stop()


@pytest.mark.req("ACL-1", "ACL-2", "ACL-3", "ACL-4")
def test_each_case_is_let_through_or_refused_as_rocketmq_does(acl_broker: tuple[LaunchedBroker, str]) -> None:
    _, address = acl_broker
    client = RemotingClient(address)
    try:
        for case in cases():
            response = run_case(client, case)
            if case.refused is None:
                assert response.code != ResponseCode.SYSTEM_ERROR or "permission" not in (response.remark or ""), \
                    (case.name, response.code, response.remark)
                assert "accessKey" not in (response.remark or ""), (case.name, response.remark)
            else:
                assert response.code == ResponseCode.SYSTEM_ERROR, (case.name, response.code, response.remark)
                assert case.refused in (response.remark or ""), (case.name, response.remark)
                # Nothing leaks: no fields, no body, nothing of the secret.
                assert response.ext_fields == {} and response.body == b"", case.name
                assert "Secret" not in (response.remark or "")
    finally:
        client.close()


@pytest.mark.req("ACL-5")
def test_a_refused_request_changes_nothing_and_the_name_server_stays_open(
        acl_broker: tuple[LaunchedBroker, str]) -> None:
    broker, address = acl_broker
    user = RemotingClient(address, credentials=USER)
    anonymous = RemotingClient(address)
    try:
        def max_offset() -> int:
            response = user.invoke(RequestCode.GET_MAX_OFFSET, {"topic": "AclTopic", "queueId": "0"})
            assert response.code == ResponseCode.SUCCESS, response.remark
            return int(response.ext_fields["offset"])

        assert user.invoke(RequestCode.SEND_MESSAGE, send_fields("AclTopic"), b"kept").code == ResponseCode.SUCCESS
        before = max_offset()
        refused = anonymous.invoke(RequestCode.SEND_MESSAGE, send_fields("AclTopic"), b"forged")
        assert refused.code == ResponseCode.SYSTEM_ERROR and max_offset() == before
        pull = anonymous.invoke(RequestCode.PULL_MESSAGE, pull_fields("AclTopic", "AclGroup"))
        assert pull.code == ResponseCode.SYSTEM_ERROR and pull.body == b"", "a refused pull reads nothing"
        pulled = user.invoke(RequestCode.PULL_MESSAGE, pull_fields("AclTopic", "AclGroup"))
        assert pulled.code == ResponseCode.SUCCESS and b"kept" in pulled.body and b"forged" not in pulled.body
    finally:
        user.close()
        anonymous.close()
    names = RemotingClient(broker.address)  # RocketMQ's name server checks no ACL: clients find routes unsigned
    try:
        route = names.invoke(GET_ROUTEINFO_BY_TOPIC, {"topic": "AclTopic"})
        assert route.code == ResponseCode.SUCCESS
    finally:
        names.close()


@pytest.mark.req("ACL-6")
@pytest.mark.parametrize("where", ["global", "account"])
def test_a_white_listed_address_skips_the_signature(tmp_path: Path, where: str) -> None:
    text = ACL_FILE.read_text()
    if where == "global":
        text = text.replace("globalWhiteRemoteAddresses: []", "globalWhiteRemoteAddresses: ['127.0.0.*']")
        credentials_kept = None
    else:
        text = text.replace("    whiteRemoteAddress:\n    admin: false", "    whiteRemoteAddress: 127.0.0.1-9\n"
                            "    admin: false", 1)
        credentials_kept = "mqtckUser"
    acl = tmp_path / "acl.yml"
    acl.write_text(text)
    broker = launch_broker("remoting", tmp_path / "data", "--acl", str(acl))
    try:
        address = discover_broker(broker.address)
        prepare(address)
        client = RemotingClient(address)
        try:
            fields = send_fields("AclDenied")
            if credentials_kept is not None:  # the account is named, its signature is not checked, nor its perms
                fields["AccessKey"] = credentials_kept
                fields["Signature"] = "not-a-signature"
            response = client.invoke(RequestCode.SEND_MESSAGE, fields, b"white-listed")
            assert response.code == ResponseCode.SUCCESS, response.remark
            if where == "account":
                unknown = client.invoke(RequestCode.SEND_MESSAGE, {**fields, "AccessKey": "nobodyKnowsMe"}, b"x")
                assert unknown.code == ResponseCode.SYSTEM_ERROR and "No acl config" in (unknown.remark or "")
        finally:
            client.close()
    finally:
        assert "Traceback" not in broker.stop()


@pytest.mark.parametrize(("change", "says"), [
    (("secretKey: mqtckUserSecret", "secretKey: short"), "accounts[0].secretKey: must be at least 7 characters"),
    (("AclReadOnly=SUB", "AclReadOnly=READ"), "accounts[0].topicPerms[1]: the permission must be one of"),
    (("globalWhiteRemoteAddresses: []", "globalWhiteRemoteAddresses: ['10.0.0.300']"),
     "globalWhiteRemoteAddresses[0]: '10.0.0.300': '10.0.0.300' is not an IPv4 address"),
    (("globalWhiteRemoteAddresses: []", "globalWhiteRemoteAddresses: ['192.*.1.*']"),
     "the segments after the first '*' or range must be '*'"),
    (("AclReadOnly=SUB", "AclReadOnly=ANY"), "(RocketMQ reads any other as DENY), got 'ANY'"),
    (("accessKey: mqtckAdmin", "accessKey: mqtckUser"), "accounts[1].accessKey: 'mqtckUser' is named twice"),
    (("accounts:", "accounts: ["), "not YAML"),
])
def test_a_bad_acl_file_is_a_usage_error_naming_the_field(tmp_path: Path, change: tuple[str, str], says: str) -> None:
    acl = tmp_path / "acl.yml"
    acl.write_text(ACL_FILE.read_text().replace(*change, 1))
    run = subprocess.run([sys.executable, "-m", "conformance.cli", "broker", "--remoting", "127.0.0.1:0",
                          "--data-dir", str(tmp_path / "d"), "--acl", str(acl)], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 2, run.stderr
    assert says in run.stderr and len(run.stderr.strip().splitlines()) == 1 and "Traceback" not in run.stderr
