"""ACL 1.0 with the official C++ client (PyPI ``rocketmq==0.4.4``): its SessionCredentials sign every request as
``mqtck broker --remoting --acl FILE`` verifies them (issue 20, access control). Right keys send and consume; a wrong
secret, an unknown key and a topic the account may not write are refused, and nothing refused is stored."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

rocketmq_client = pytest.importorskip("rocketmq.client")

from conformance.targets.launch import launch_broker  # noqa: E402
from conformance.targets.remoting import discover_broker  # noqa: E402
from reference.net.remoting.client import RemotingClient  # noqa: E402
from reference.net.remoting.command import RequestCode  # noqa: E402
from tests.acl_cases import ACL_FILE, USER, prepare  # noqa: E402
from tests.interop.harness import home_for_client, wait_for  # noqa: E402

#: The C++ client's channel field (OnsChannel), signed with the rest.
CHANNEL = "LOCAL"


def _producer(namesrv: str, group: str, access_key: str, secret: str) -> object:
    producer = rocketmq_client.Producer(group, timeout=3000)
    producer.set_namesrv_addr(namesrv)
    producer.set_session_credentials(access_key, secret, CHANNEL)
    producer.start()
    return producer


def _send(producer: object, topic: str, body: str) -> str:
    """'OK' or the exception's class name."""
    message = rocketmq_client.Message(topic)
    message.set_body(body)
    try:
        result = producer.send_sync(message)  # type: ignore[attr-defined]
    except Exception as exc:  # noqa: BLE001 - the refusal surfaces as the client's exception
        return type(exc).__name__
    return "OK" if result.status == rocketmq_client.SendStatus.OK else str(result.status)


#: A producer with other credentials runs in a process of its own: the C++ client shares one client instance (and
#: so one set of credentials, for its heartbeats too) among the producers and consumers of a process, as the Java
#: client's MQClientInstance does.
_SEND_ELSEWHERE = """
import sys
from rocketmq.client import Message, Producer, SendStatus
namesrv, group, key, secret, channel = sys.argv[1:]
producer = Producer(group, timeout=3000)
producer.set_namesrv_addr(namesrv)
producer.set_session_credentials(key, secret, channel)
producer.start()
message = Message("AclTopic")
message.set_body("forged")
try:
    result = producer.send_sync(message)
    print("OK" if result.status == SendStatus.OK else str(result.status))
except Exception as exc:
    print(type(exc).__name__)
producer.shutdown()
"""


def _send_elsewhere(namesrv: str, group: str, key: str, secret: str) -> str:
    """What a producer with these credentials, in a process of its own, is told when it sends to AclTopic."""
    run = subprocess.run([sys.executable, "-c", _SEND_ELSEWHERE, namesrv, group, key, secret, CHANNEL],
                         capture_output=True, text=True, timeout=120)
    return run.stdout.strip().splitlines()[-1] if run.stdout.strip() else f"exit {run.returncode}: {run.stderr[-300:]}"


def _max_offsets(address: str, topic: str) -> list[int]:
    client = RemotingClient(address, credentials=USER)
    try:
        return [int(client.invoke(RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": q}).ext_fields["offset"])
                for q in range(4)]
    finally:
        client.close()


@pytest.mark.req("ACL-1", "ACL-2")
def test_the_cpp_clients_credentials_are_verified_and_enforced(tmp_path: Path) -> None:
    home_for_client(tmp_path / "home")
    broker = launch_broker("remoting", tmp_path / "data", "--acl", str(ACL_FILE))
    producers: list[object] = []
    consumer = None
    try:
        namesrv = broker.address
        address = discover_broker(namesrv)
        prepare(address)

        good = _producer(namesrv, "PG_ACL_GOOD", "mqtckUser", "mqtckUserSecret")
        producers.append(good)
        assert [_send(good, "AclTopic", f"signed-{i}") for i in range(5)] == ["OK"] * 5
        denied_before = _max_offsets(address, "AclDenied")
        assert _send(good, "AclDenied", "not-allowed") == "ProducerSendSyncFailed"
        assert _max_offsets(address, "AclDenied") == denied_before

        for group, key, secret in (("PG_ACL_WRONG", "mqtckUser", "wrongSecret"),
                                   ("PG_ACL_UNKNOWN", "nobodyKnowsMe", "whatever-secret")):
            before = _max_offsets(address, "AclTopic")
            told = _send_elsewhere(namesrv, group, key, secret)
            assert told == "ProducerSendSyncFailed", (key, secret, told)
            assert _max_offsets(address, "AclTopic") == before

        received: list[str] = []
        lock = threading.Lock()

        def on_message(message: object) -> None:  # returning normally acknowledges it
            with lock:
                received.append(message.body.decode())  # type: ignore[attr-defined]

        consumer = rocketmq_client.PushConsumer("AclGroup")
        consumer.set_namesrv_addr(namesrv)
        consumer.set_session_credentials("mqtckUser", "mqtckUserSecret", CHANNEL)
        consumer.subscribe("AclTopic", on_message)
        consumer.start()
        wait_for(lambda: len(set(received)) >= 5, f"the signed consumer to receive the 5 signed messages ({received})",
                 90)
        assert set(received) == {f"signed-{i}" for i in range(5)}, "a refused send was stored"
    finally:
        if consumer is not None:
            consumer.shutdown()
        for producer in producers:
            producer.shutdown()  # type: ignore[attr-defined]
        assert "Traceback" not in broker.stop()
