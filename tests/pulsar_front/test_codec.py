"""The front's own codec (reference/net/pulsar/schema.py, frame.py) checked byte for byte: against the wire notes'
observed frames and CRC vectors, and against the real pulsar-client 3.13 through a recording proxy: every
BaseCommand either side sent re-encodes to the very bytes on the wire (so the table holds every field the client
sends, in its order), and every entry a producer sent reaches the consumer verbatim."""

from __future__ import annotations

import struct
import time
from pathlib import Path

import pytest

from reference.net.pulsar import frame
from reference.net.pulsar.schema import pb
from tests.pulsar_front.capture import FrameCapture, frames
from tests.pulsar_front.inprocess import FrontThread


def test_crc32c_vectors() -> None:
    assert frame.crc32c(b"123456789") == 0xE3069283
    assert frame.crc32c(b"56789", frame.crc32c(b"1234")) == 0xE3069283, "chained parts equal one CRC"


def test_connect_and_connected_as_observed() -> None:
    observed_connect = bytes.fromhex("0000002900000025080212210a11") + b"Pulsar-CPP-v4.2.0" + bytes.fromhex(
        "20142a04") + b"none" + bytes.fromhex("520408011001")
    command, rest = frame.decode(observed_connect[4:])
    assert rest == b"" and command.connect.client_version == "Pulsar-CPP-v4.2.0"  # type: ignore[attr-defined]
    assert frame.encode(command) == observed_connect
    connected = pb.BaseCommand(type=pb.Type_.CONNECTED)
    connected.connected.server_version = "py-test-broker"
    connected.connected.protocol_version = 20
    connected.connected.max_message_size = 5242880
    assert frame.encode(connected) == bytes.fromhex("0000001f0000001b08031a170a0e") + b"py-test-broker" + \
        bytes.fromhex("1014188080c002")


def test_entry_checksum_and_batch_detection() -> None:
    single = pb.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1).SerializeToString()
    body = struct.pack(">I", len(single)) + single + b"hello"
    entry = frame.read_entry(body)  # a SEND without magic (protocol < 6) is stored in the checksummed form
    assert entry.raw[:2] == b"\x0e\x01" and entry.size == 1 and not entry.batched
    assert frame.read_entry(entry.raw).raw == entry.raw
    batch = pb.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1, num_messages_in_batch=1)
    meta = batch.SerializeToString()
    assert frame.read_entry(struct.pack(">I", len(meta)) + meta).batched, "presence, not value, makes a batch"


def test_real_client_frames_round_trip_byte_for_byte(tmp_path: Path) -> None:
    pulsar = pytest.importorskip("pulsar", reason="not applicable: pip install 'mqtck[dev]'")
    front = FrontThread(tmp_path / "data")
    capture = FrameCapture(front.address)
    front.start(capture.url)
    client = pulsar.Client(capture.url, operation_timeout_seconds=10,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        consumer = client.subscribe("codec", "s", consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=4,
                                    negative_ack_redelivery_delay_ms=100)
        batched = client.create_producer("codec", batching_enabled=True, batching_max_messages=3,
                                         batching_max_publish_delay_ms=10)
        for i in range(6):
            batched.send_async(b"b%d" % i, None, properties={"k": str(i)})
        batched.flush()
        client.create_producer("codec", producer_name="named").send(b"single", properties={"a": "b"})
        first = consumer.receive(timeout_millis=5000)
        consumer.negative_acknowledge(first)
        for _ in range(7):
            consumer.acknowledge(consumer.receive(timeout_millis=5000))
        time.sleep(0.3)  # the grouped acks
        consumer.close()
    finally:
        client.close()
        time.sleep(0.2)
        front.stop()
        capture.close()
    kinds: dict[str, set[int]] = {"client": set(), "broker": set()}
    sent_entries, received_entries = [], []
    for side, stream in (("client", capture.to_broker), ("broker", capture.to_client)):
        for raw in frames(bytes(stream)):
            command, entry = frame.decode(raw)
            (size,) = struct.unpack_from(">I", raw)
            assert command.SerializePartialToString() == raw[4:4 + size], f"{side} {command}"  # type: ignore[attr-defined]
            kinds[side].add(command.type)  # type: ignore[attr-defined]
            if command.type == pb.Type_.SEND:  # type: ignore[attr-defined]
                sent_entries.append(entry)
            if command.type == pb.Type_.MESSAGE:  # type: ignore[attr-defined]
                received_entries.append(entry)
    assert {pb.Type_.CONNECT, pb.Type_.SUBSCRIBE, pb.Type_.PRODUCER, pb.Type_.SEND, pb.Type_.FLOW, pb.Type_.ACK,
            pb.Type_.REDELIVER_UNACKNOWLEDGED_MESSAGES, pb.Type_.CLOSE_CONSUMER} <= kinds["client"]
    assert {pb.Type_.CONNECTED, pb.Type_.SUCCESS, pb.Type_.PRODUCER_SUCCESS, pb.Type_.SEND_RECEIPT,
            pb.Type_.MESSAGE} <= kinds["broker"]
    assert set(received_entries) == set(sent_entries), "entries are forwarded verbatim"
