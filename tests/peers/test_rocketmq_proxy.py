"""The Apache RocketMQ 5.5.0 proxy peer (LOCAL mode) and the ``grpc://`` target against it.

One proxy for the module (it starts in 12-18 s): its gRPC MessagingService is what the official v5 clients speak,
so the target's pops, acks and changes of invisible time are judged here against the real thing; and the stubs
generated from the npm protos declare exactly the methods the proxy's own rocketmq-proto jar serves."""

from __future__ import annotations

import re
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.peers import peer_info
from conformance.peers.maven import proxy_classpath
from conformance.peers.rocketmq_proxy import ProxyPeer
from conformance.targets import TargetError
from conformance.targets.grpc import GrpcTarget
from conformance.targets.registry import parse_target
from conformance.targets.remoting import discover_broker
from reference.net.grpc import protos

NAME = "rocketmq-proxy-5.5.0"


@pytest.fixture(scope="module")
def proxy() -> Iterator[ProxyPeer]:
    with ProxyPeer(peer_info(NAME)) as peer:
        yield peer


@pytest.fixture
def target(proxy: ProxyPeer) -> Iterator[GrpcTarget]:
    spec = parse_target(proxy.target)
    t = GrpcTarget(spec.arg, spec.options["remoting"])
    yield t
    t.close()


def test_the_proxy_serves_grpc_with_its_broker_registered_on_loopback(proxy: ProxyPeer) -> None:
    spec = parse_target(proxy.target)
    assert spec.kind == "grpc" and spec.arg == f"127.0.0.1:{proxy.grpc_port}"
    assert discover_broker(spec.options["remoting"]) == proxy.broker_address
    assert proxy.broker_address.startswith("127.0.0.1:")


def test_pop_ack_and_change_over_the_proxys_grpc(target: GrpcTarget) -> None:
    """ReceiveMessage hands out every queue's messages with receipt handles; an acknowledged one never comes back,
    one whose invisibility was shortened comes back as a retry, counted."""
    target.create_topic("ProxyT", 2)
    sent = {target.send("ProxyT", i % 2, b"m%d" % i, "A").msg_id for i in range(3)}
    deadline = time.monotonic() + 10
    got: list = []
    while len(got) < 3 and time.monotonic() < deadline:
        got += list(target.pop("G", "ProxyT", -1, 32, 60_000, 1_000).result().messages)
    assert {m.msg_id for m in got} == sent and len({m.handle for m in got}) == 3
    assert all(not m.retry and m.reconsume_times == 0 and m.tags == "A" for m in got)
    acked, shortened, _ = got
    target.ack("G", "ProxyT", acked.handle)
    new_handle = target.change_invisible("G", "ProxyT", shortened.handle, 2_000)
    assert new_handle != shortened.handle
    back = target.pop("G", "ProxyT", -1, 32, 60_000, 20_000).result()
    assert [m.msg_id for m in back.messages] == [shortened.msg_id]
    assert back.messages[0].retry and back.messages[0].reconsume_times == 1
    with pytest.raises(TargetError) as err:  # below the peer's minInvisibleTimeMillsForRecv
        target.pop("G", "ProxyT", -1, 32, 0, 0).result()
    assert err.value.code == "ILLEGAL_INVISIBLE_TIME" and err.value.field == "invisibleTime"


def test_an_empty_poll_is_answered_at_once_and_a_held_one_at_its_time(target: GrpcTarget) -> None:
    target.create_topic("EmptyT", 1)
    assert target.pop("G", "EmptyT", -1, 32, 60_000, 0).result().code == "POLLING_TIMEOUT"
    held = target.pop("G", "EmptyT", -1, 32, 60_000, 2_000).result()
    assert held.code == "POLLING_TIMEOUT" and 1_500 <= held.held_ms < 10_000


def test_the_stubs_declare_what_the_proxys_proto_jar_serves() -> None:
    """MessagingService's methods in the stubs generated from rocketmq-client-nodejs 1.0.8's protos are the ones the
    proxy's rocketmq-proto jar (MessagingServiceGrpc, one getXMethod per RPC) serves."""
    [jar] = [j for j in proxy_classpath("5.5.0") if Path(j).name.startswith("rocketmq-proto-")]
    code = zipfile.ZipFile(jar).read("apache/rocketmq/v2/MessagingServiceGrpc.class")
    served = {m.decode() for m in re.findall(rb"get([A-Z][A-Za-z]*?)Method", code)}
    service = protos.load().service.DESCRIPTOR.services_by_name["MessagingService"]
    assert {m.name for m in service.methods} == served
