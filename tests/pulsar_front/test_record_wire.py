"""The Pulsar recorder's mapping, frame by frame (no network): what each command becomes in the trace, messages of
a batch by their index (only those an ``ack_set`` delivers), consumer names made unique across re-creations, and a
stream that stops framing forwarded unread."""

from __future__ import annotations

import json
import struct

from conformance.record.pulsar_proxy import PulsarFrames, rewrite_lookup
from conformance.record.pulsar_wire import PulsarConnection, PulsarRecorder, offset_of
from reference.clock import RealClock
from reference.net.pulsar import frame
from reference.net.pulsar.schema import pb
from reference.trace import MemorySink, Trace

T = pb.Type_


def _cmd(kind: int, field: str, **values: object) -> object:
    command = pb.BaseCommand(type=kind)
    getattr(command, field).MergeFrom(getattr(pb, type(getattr(command, field)).__name__)(**values))
    return command


def _entry(batch: int | None) -> bytes:
    meta = pb.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1)
    if batch is not None:
        meta.num_messages_in_batch = batch
    body = meta.SerializeToString()
    raw = struct.pack(">I", len(body)) + body
    return struct.pack(">HI", frame.MAGIC_CRC32C, frame.crc32c(raw)) + raw


def _subscribe(rec: PulsarRecorder, conn: PulsarConnection, consumer_id: int, request_id: int) -> None:
    rec.from_client(conn, _cmd(T.SUBSCRIBE, "subscribe", topic="persistent://t/n/x", subscription="s", subType=1,
                               consumer_id=consumer_id, request_id=request_id, consumer_name="c"), b"")
    rec.from_server(conn, _cmd(T.SUCCESS, "success", request_id=request_id), b"")


def test_commands_become_rows() -> None:
    sink = MemorySink()
    trace = Trace(sink, "r", RealClock())
    rec = PulsarRecorder(trace)
    conn = PulsarConnection("client", "127.0.0.1:6650")
    rec.from_client(conn, _cmd(T.PRODUCER, "producer", topic="persistent://t/n/x", producer_id=1, request_id=1), b"")
    rec.from_server(conn, _cmd(T.PRODUCER_SUCCESS, "producer_success", request_id=1, producer_name="p"), b"")
    rec.from_client(conn, _cmd(T.SEND, "send", producer_id=1, sequence_id=0, num_messages=3), _entry(3))
    receipt = _cmd(T.SEND_RECEIPT, "send_receipt", producer_id=1, sequence_id=0)
    receipt.send_receipt.message_id.ledgerId, receipt.send_receipt.message_id.entryId = 7, 2  # type: ignore[attr-defined]
    rec.from_server(conn, receipt, b"")
    _subscribe(rec, conn, 0, 2)
    rec.from_client(conn, _cmd(T.FLOW, "flow", consumer_id=0, messagePermits=2), b"")
    message = _cmd(T.MESSAGE, "message", consumer_id=0, redelivery_count=1, ack_set=[0b101])
    message.message.message_id.ledgerId, message.message.message_id.entryId = 7, 2  # type: ignore[attr-defined]
    rec.from_server(conn, message, _entry(3))
    ack = _cmd(T.ACK, "ack", consumer_id=0, ack_type=0)
    mid = ack.ack.message_id.add(ledgerId=7, entryId=2)  # type: ignore[attr-defined]
    mid.ack_set.append(0b100)  # index 2 still unacknowledged: 0 and 1 are acked
    rec.from_client(conn, ack, b"")
    rec.from_client(conn, _cmd(T.CLOSE_CONSUMER, "close_consumer", consumer_id=0, request_id=3), b"")
    _subscribe(rec, conn, 1, 4)  # created again under the same name
    rec.closed(conn)

    assert [r["msg_id"] for r in sink.of("SEND")] == ["7:2:0", "7:2:1", "7:2:2"]
    assert {r["offset"] for r in sink.of("SEND")} == {offset_of(7, 2)}
    assert [r["count"] for r in sink.of("FLOW")] == [2]
    dispatched = sink.of("DISPATCH")
    assert [r["msg_id"] for r in dispatched] == ["7:2:0", "7:2:2"], "only the indices the ack_set delivers"
    assert [json.loads(r["detail"]) for r in dispatched][1] == {"batch_index": 2, "batch_size": 3,
                                                                "redelivery_count": 1}
    assert [r["msg_id"] for r in sink.of("ACK")] == ["7:2:0", "7:2:1"]
    assert [r["client_id"] for r in sink.of("SUBSCRIBE")] == ["c", "c#2"]
    assert [r["client_id"] for r in sink.of("UNSUBSCRIBE")] == ["c", "c#2"]
    assert {r["source"] for r in sink.rows} == {"broker:127.0.0.1:6650"}
    assert rec.malformed == 0


def test_lookup_answers_name_the_proxy() -> None:
    answer = _cmd(T.LOOKUP_RESPONSE, "lookupTopicResponse", brokerServiceUrl="pulsar://10.0.0.5:6650", response=1,
                  request_id=9, authoritative=True)
    command, _ = frame.decode(rewrite_lookup(answer, "pulsar://127.0.0.1:7000")[4:])
    assert command.lookupTopicResponse.brokerServiceUrl == "pulsar://127.0.0.1:7000"  # type: ignore[attr-defined]
    assert command.lookupTopicResponse.request_id == 9  # type: ignore[attr-defined]


def test_a_stream_that_stops_framing_is_forwarded_unread() -> None:
    frames = PulsarFrames()
    ping = frame.encode(pb.BaseCommand(type=T.PING))
    bad = struct.pack(">I", frame.MAX_FRAME_BYTES + 1) + b"xx"
    got = frames.feed(ping + bad)
    assert [c.type for _, c, _ in got] == [T.PING]
    assert frames.broken and frames.unread() == bad
    assert frames.feed(b"more") == []
