"""Bad input to ``mqtck broker --pulsar``: framing that cannot be read closes that connection only; a command
that breaks a rule is answered with the protocol's error naming the field and the rule; the broker and every other
connection (a real pulsar-client among them) serve on."""

from __future__ import annotations

import struct

import pytest

from reference.net.pulsar.schema import pb
from tests.pulsar_front.conftest import PulsarBroker
from tests.pulsar_front.wire import RawConnection


def _command(kind: int, field: str, **values: object) -> object:
    cmd = pb.BaseCommand(type=kind)
    sub = getattr(cmd, field)
    sub.SetInParent()
    for name, value in values.items():
        setattr(sub, name, value)
    return cmd


def _alive(url: str) -> None:
    conn = RawConnection(url)
    assert conn.connect().type == pb.Type_.CONNECTED  # type: ignore[attr-defined]
    assert conn.ping().type == pb.Type_.PONG  # type: ignore[attr-defined]
    conn.close()


@pytest.mark.req("INPUT-5")
def test_unreadable_framing_closes_only_that_connection(pulsar_broker: PulsarBroker) -> None:
    bystander = RawConnection(pulsar_broker.url)
    bystander.connect()
    for garbage in (struct.pack(">I", 0xFFFFFFF0) + b"x" * 16,     # a frame larger than any allowed
                    struct.pack(">II", 8, 100) + b"abcd",            # a command size past the frame's end
                    struct.pack(">II", 8, 4) + b"\xff\xff\xff\xff"):  # a BaseCommand that does not parse
        conn = RawConnection(pulsar_broker.url)
        conn.connect()
        conn.send_bytes(garbage)
        assert conn.closed_by_peer()
    first = RawConnection(pulsar_broker.url)
    first.send(_command(pb.Type_.PING, "ping"))  # anything but CONNECT first
    assert first.closed_by_peer()
    assert bystander.ping().type == pb.Type_.PONG  # type: ignore[attr-defined]
    _alive(pulsar_broker.url)


@pytest.mark.req("INPUT-5")
def test_commands_that_break_a_rule_get_the_error_naming_the_field(pulsar_broker: PulsarBroker) -> None:
    conn = RawConnection(pulsar_broker.url)
    conn.connect()
    topic = "persistent://public/default/bad-input"
    cases = [
        (_command(pb.Type_.SUBSCRIBE, "subscribe", topic=topic, subType=0, consumer_id=0, request_id=7),
         "subscription: is a required field"),
        (_command(pb.Type_.SUBSCRIBE, "subscribe", topic=topic, subscription="s", subType=3, consumer_id=0,
                  request_id=8), "subType: Key_Shared is not served"),
        (_command(pb.Type_.SUBSCRIBE, "subscribe", topic="persistent://public/default/a b", subscription="s",
                  subType=0, consumer_id=1, request_id=9), "topic: "),
        (_command(pb.Type_.SUBSCRIBE, "subscribe", topic=topic, subscription="bad sub!", subType=0, consumer_id=2,
                  request_id=10), "subscription: may contain only"),
        (_command(pb.Type_.SEEK, "seek", consumer_id=0, request_id=11), "seek: not served"),
    ]
    for command, message in cases:
        conn.send(command)
        reply = conn.read()[0]
        assert reply.type == pb.Type_.ERROR, reply  # type: ignore[attr-defined]
        assert reply.error.request_id == command.subscribe.request_id or reply.error.request_id == 11  # type: ignore[attr-defined]
        assert reply.error.message.startswith(message), reply.error.message  # type: ignore[attr-defined]
    lookup = _command(pb.Type_.LOOKUP, "lookupTopic", topic="not-qualified", request_id=12)
    conn.send(lookup)
    reply = conn.read()[0]
    assert reply.lookupTopicResponse.response == pb.LookupType_.Failed  # type: ignore[attr-defined]
    assert reply.lookupTopicResponse.message.startswith("topic: must be persistent://")  # type: ignore[attr-defined]
    # No error reply exists for FLOW: a FLOW of an unknown consumer, or of 0 permits, is ignored (as Java does).
    conn.send(_command(pb.Type_.FLOW, "flow", consumer_id=99, messagePermits=5))
    conn.send(_command(pb.Type_.FLOW, "flow", consumer_id=99, messagePermits=0))
    assert conn.ping().type == pb.Type_.PONG  # type: ignore[attr-defined]
    # A SEND whose checksum is wrong: SEND_ERROR ChecksumError for that message only.
    conn.send(_command(pb.Type_.PRODUCER, "producer", topic=topic, producer_id=0, request_id=13))
    assert conn.read()[0].type == pb.Type_.PRODUCER_SUCCESS  # type: ignore[attr-defined]
    metadata = pb.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1).SerializeToString()
    body = struct.pack(">I", len(metadata)) + metadata + b"payload"
    conn.send(_command(pb.Type_.SEND, "send", producer_id=0, sequence_id=0), struct.pack(">HI", 0x0E01, 1) + body)
    reply = conn.read()[0]
    assert reply.type == pb.Type_.SEND_ERROR  # type: ignore[attr-defined]
    assert reply.send_error.error == pb.ServerError_.ChecksumError  # type: ignore[attr-defined]
    assert reply.send_error.message.startswith("checksum: ")  # type: ignore[attr-defined]
    assert conn.ping().type == pb.Type_.PONG  # type: ignore[attr-defined]
    _alive(pulsar_broker.url)


def test_a_real_client_is_unaffected_by_a_bad_neighbour(pulsar_broker: PulsarBroker) -> None:
    pulsar = pytest.importorskip("pulsar", reason="not applicable: pip install 'mqtck[dev]'")
    client = pulsar.Client(pulsar_broker.url, operation_timeout_seconds=10,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        consumer = client.subscribe("neighbour", "s", receiver_queue_size=5)
        producer = client.create_producer("neighbour")
        bad = RawConnection(pulsar_broker.url)
        bad.connect()
        bad.send_bytes(struct.pack(">II", 8, 4) + b"\xff\xff\xff\xff")
        assert bad.closed_by_peer()
        producer.send(b"still here")
        assert consumer.receive(timeout_millis=5000).data() == b"still here"
    finally:
        client.close()
