"""FLOW-15 on the reference Pulsar front: a consumer whose protocol version predates batch messages is never sent a
batch entry; its connection is closed (seed 003 line 62), single messages reach it, and the batch goes to the
subscription's next consumer. Only a raw connection can claim an old protocol version, so this is judged here, on
the reference front, rather than through a target."""

from __future__ import annotations

import struct

import pytest

from reference.net.pulsar import frame
from reference.net.pulsar.consume import BATCH_VERSION
from reference.net.pulsar.schema import pb
from tests.pulsar_front.conftest import PulsarBroker
from tests.pulsar_front.wire import RawConnection

T = pb.Type_
TOPIC = "persistent://public/default/batch-compat"


def _cmd(kind: int, field: str, **values: object) -> object:
    command = pb.BaseCommand(type=kind)
    getattr(command, field).MergeFrom(getattr(pb, type(getattr(command, field)).__name__)(**values))
    return command


def _connect(url: str, version: int) -> RawConnection:
    conn = RawConnection(url)
    conn.send(_cmd(T.CONNECT, "connect", client_version="mqtck-test", protocol_version=version))
    assert conn.read()[0].type == T.CONNECTED  # type: ignore[attr-defined]
    return conn


def _consumer(url: str, version: int, name: str) -> RawConnection:
    conn = _connect(url, version)
    conn.send(_cmd(T.SUBSCRIBE, "subscribe", topic=TOPIC, subscription="s", subType=pb.SubType_.Shared,
                   consumer_id=1, request_id=1, consumer_name=name))
    assert conn.read()[0].type == T.SUCCESS  # type: ignore[attr-defined]
    conn.send(_cmd(T.FLOW, "flow", consumer_id=1, messagePermits=10))
    return conn


def _send(producer: RawConnection, sequence: int, batch: int | None) -> None:
    meta = pb.MessageMetadata(producer_name="p", sequence_id=sequence, publish_time=1)
    payload = b"single"
    if batch is not None:
        meta.num_messages_in_batch = batch
        single = pb.SingleMessageMetadata(payload_size=1).SerializeToString()
        payload = b"".join(struct.pack(">I", len(single)) + single + b"x" for _ in range(batch))
    body = meta.SerializeToString()
    raw = struct.pack(">I", len(body)) + body + payload
    producer.send(_cmd(T.SEND, "send", producer_id=1, sequence_id=sequence, num_messages=batch or 1),
                  struct.pack(">HI", frame.MAGIC_CRC32C, frame.crc32c(raw)) + raw)
    assert producer.read()[0].type == T.SEND_RECEIPT  # type: ignore[attr-defined]


@pytest.mark.req("FLOW-15")
def test_a_consumer_without_batch_support_is_closed_not_sent_a_batch(pulsar_broker: PulsarBroker) -> None:
    legacy = _consumer(pulsar_broker.url, BATCH_VERSION - 1, "legacy")
    producer = _connect(pulsar_broker.url, 20)
    producer.send(_cmd(T.PRODUCER, "producer", topic=TOPIC, producer_id=1, request_id=1))
    assert producer.read()[0].type == T.PRODUCER_SUCCESS  # type: ignore[attr-defined]
    _send(producer, 0, None)
    command, _ = legacy.read()
    assert command.type == T.MESSAGE, "a single message reaches a client of any version"  # type: ignore[attr-defined]
    _send(producer, 1, 3)
    assert legacy.closed_by_peer(), "a batch entry for a client that cannot read batches closes its connection"
    modern = _consumer(pulsar_broker.url, 20, "modern")
    got = []
    while len(got) < 2:
        command, entry = modern.read()
        if command.type == T.MESSAGE:  # type: ignore[attr-defined]
            meta = frame.payload_of(entry)[0]
            got.append(meta.num_messages_in_batch if meta.HasField("num_messages_in_batch") else 0)
    assert sorted(got) == [0, 3], "the closed consumer's messages, the batch too, go to the next consumer"
