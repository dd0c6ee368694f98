"""Pulsar binary frames in, trace v1 rows out: what ``mqtck record --protocol pulsar`` writes.

The frames are decoded with the reference front's own codec (``reference.net.pulsar``). One row source per broker
(``broker:HOST:PORT``, the upstream the connection goes to), since the proxy sees what that broker did:

* SEND: one per message of an entry the broker acknowledged with SEND_RECEIPT (topic, offset, msg_id);
* SUBSCRIBE: when the broker answers a SUBSCRIBE with SUCCESS (group = the subscription, model CLUSTERING:
  a subscription consumes each message once, whatever its type, which goes in ``detail``);
* FLOW: ``count`` = the permits the consumer granted;
* DISPATCH: one per message a MESSAGE command delivers (with an ``ack_set``, only the indices whose bit is set),
  ``detail`` {batch_index, batch_size, redelivery_count};
* ACK: one per message acknowledged (``handle`` = ``msg_id``: the wire has no handle);
* UNSUBSCRIBE: on CLOSE_CONSUMER (either side), on UNSUBSCRIBE, and for the consumers left when a connection ends.

Names. A message id (ledger, entry) is ``offset`` = ledger * 2^32 + entry, so that two entries of one topic never
share an offset (the audit reads an entry's messages by their common offset), and ``msg_id`` is ``L:E`` or, for a
message of a batch, ``L:E:index``. ``client_id`` is the consumer's name; a consumer created again under a name
already recorded (a reconnect) gets ``name#2``, ``name#3``...: the broker starts every new consumer at 0 permits,
and the audit keys a permit balance by client (conformance/audit/permits.py).
"""

from __future__ import annotations

import struct
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from reference.clock import RealClock
from reference.net.pulsar.frame import MAGIC_CRC32C
from reference.net.pulsar.schema import ENUMS, pb
from reference.trace import Trace

#: The magic of the broker-entry metadata a broker may put before the checksummed entry (pulsar-binary §3).
MAGIC_BROKER_ENTRY_METADATA = 0x0E02
LEDGER_SHIFT = 32
_TYPE_NAMES = {number: name for name, number in ENUMS["Type"]}
_SUB_TYPE_NAMES = {number: name for name, number in ENUMS["SubType"]}


def offset_of(ledger_id: int, entry_id: int) -> int:
    return (ledger_id << LEDGER_SHIFT) | entry_id


def msg_id_of(ledger_id: int, entry_id: int, index: int | None) -> str:
    return f"{ledger_id}:{entry_id}" if index is None else f"{ledger_id}:{entry_id}:{index}"


def entry_batch(after_command: bytes) -> int | None:
    """The batch size of the entry after a SEND or MESSAGE command (None: not a batch), skipping the broker-entry
    metadata and the checksum. ValueError if the bytes are not an entry."""
    data = after_command
    if len(data) >= 6 and struct.unpack_from(">H", data)[0] == MAGIC_BROKER_ENTRY_METADATA:
        (size,) = struct.unpack_from(">I", data, 2)
        data = data[6 + size:]
    if len(data) >= 6 and struct.unpack_from(">H", data)[0] == MAGIC_CRC32C:
        data = data[6:]
    if len(data) < 4:
        raise ValueError("no metadata after the command")
    (size,) = struct.unpack_from(">I", data)
    metadata = pb.MessageMetadata()
    metadata.ParseFromString(data[4:4 + size])
    return metadata.num_messages_in_batch if metadata.HasField("num_messages_in_batch") else None


def _bits(ack_set: list[int], size: int) -> list[int]:
    """The indices below ``size`` whose bit is set in ``ack_set`` (little-endian 64-bit words)."""
    return [i for i in range(size) if i // 64 < len(ack_set) and (ack_set[i // 64] >> (i % 64)) & 1]


@dataclass
class Consumer:
    group: str
    client_id: str
    topic: str


@dataclass
class PulsarConnection:
    """What one client connection has said so far: producers, consumers and requests waiting for an answer."""

    peer: str
    #: The upstream broker (host:port) the connection goes to.
    broker: str
    producers: dict[int, str] = field(default_factory=dict)
    #: request_id -> (producer_id, topic) of a PRODUCER not answered yet.
    producing: dict[int, tuple[int, str]] = field(default_factory=dict)
    #: (producer_id, sequence_id) -> (topic, messages, batch size or None) of a SEND not acknowledged yet.
    sends: dict[tuple[int, int], tuple[str, int, int | None]] = field(default_factory=dict)
    #: request_id -> (consumer_id, group, name, topic, sub type) of a SUBSCRIBE not answered yet.
    subscribing: dict[int, tuple[int, str, str, str, str]] = field(default_factory=dict)
    consumers: dict[int, Consumer] = field(default_factory=dict)


class PulsarRecorder:
    """Frames in, rows out (into ``trace``); one instance per recording, shared by every connection."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.clock = trace.clock or RealClock()
        self.rows: Counter[str] = Counter()
        self.passed: Counter[str] = Counter()
        self.malformed = 0
        #: Consumer names recorded so far (a consumer created again gets a new client_id).
        self._names: Counter[str] = Counter()
        #: (topic, ledger, entry) -> batch size (None: not a batch), from SEND receipts and MESSAGEs, for ACKs.
        self._entries: dict[tuple[str, int, int], int | None] = {}

    # -- input ---------------------------------------------------------------------------------
    def from_client(self, conn: PulsarConnection, command: Any, rest: bytes) -> None:
        try:
            self._client(conn, command, rest)
        except (ValueError, KeyError, struct.error):
            self.malformed += 1

    def from_server(self, conn: PulsarConnection, command: Any, rest: bytes) -> None:
        try:
            self._server(conn, command, rest)
        except (ValueError, KeyError, struct.error):
            self.malformed += 1

    def closed(self, conn: PulsarConnection) -> None:
        """The connection ended: its consumers are gone (the broker closes them)."""
        for consumer_id in list(conn.consumers):
            self._leave(conn, consumer_id, "connection closed")

    def summary(self) -> dict[str, Any]:
        return {"rows": dict(sorted(self.rows.items())), "passed": dict(sorted(self.passed.items())),
                "malformed": self.malformed}

    # -- mapping -------------------------------------------------------------------------------
    def _row(self, conn: PulsarConnection, event: str, **columns: Any) -> None:
        self.trace.source(f"broker:{conn.broker}").record(event, self.clock.now_ms(), **columns)
        self.rows[event] += 1

    def _client(self, conn: PulsarConnection, command: Any, rest: bytes) -> None:
        kind = command.type
        T = pb.Type_
        if kind == T.PRODUCER:
            conn.producing[command.producer.request_id] = (command.producer.producer_id, command.producer.topic)
        elif kind == T.SEND:
            send = command.send
            topic = conn.producers.get(send.producer_id)
            if topic is not None:
                conn.sends[(send.producer_id, send.sequence_id)] = (topic, send.num_messages, entry_batch(rest))
        elif kind == T.SUBSCRIBE:
            s = command.subscribe
            name = s.consumer_name or f"consumer-{s.consumer_id}"
            conn.subscribing[s.request_id] = (s.consumer_id, s.subscription, name, s.topic,
                                              _SUB_TYPE_NAMES.get(s.subType, str(s.subType)))
        elif kind == T.FLOW:
            consumer = conn.consumers.get(command.flow.consumer_id)
            if consumer is not None:
                self._row(conn, "FLOW", **self._of(conn, consumer), count=command.flow.messagePermits)
        elif kind == T.ACK:
            self._acks(conn, command.ack)
        elif kind == T.CLOSE_CONSUMER:
            self._leave(conn, command.close_consumer.consumer_id, "closed")
        elif kind == T.UNSUBSCRIBE:
            self._leave(conn, command.unsubscribe.consumer_id, "unsubscribed")
        elif kind == T.CLOSE_PRODUCER:
            conn.producers.pop(command.close_producer.producer_id, None)
        else:
            self.passed[_TYPE_NAMES.get(kind, str(kind))] += 1

    def _server(self, conn: PulsarConnection, command: Any, rest: bytes) -> None:
        kind = command.type
        T = pb.Type_
        if kind == T.PRODUCER_SUCCESS:
            producing = conn.producing.pop(command.producer_success.request_id, None)
            if producing is not None:
                conn.producers[producing[0]] = producing[1]
        elif kind == T.SEND_RECEIPT:
            self._receipt(conn, command.send_receipt)
        elif kind == T.SUCCESS:
            subscribing = conn.subscribing.pop(command.success.request_id, None)
            if subscribing is not None:
                self._subscribed(conn, *subscribing)
        elif kind == T.ERROR:
            conn.subscribing.pop(command.error.request_id, None)
            conn.producing.pop(command.error.request_id, None)
        elif kind == T.SEND_ERROR:
            conn.sends.pop((command.send_error.producer_id, command.send_error.sequence_id), None)
        elif kind == T.MESSAGE:
            self._message(conn, command.message, rest)
        elif kind == T.CLOSE_CONSUMER:
            self._leave(conn, command.close_consumer.consumer_id, "closed by the broker")
        elif kind == T.CLOSE_PRODUCER:
            conn.producers.pop(command.close_producer.producer_id, None)
        else:
            self.passed[_TYPE_NAMES.get(kind, str(kind))] += 1

    @staticmethod
    def _of(conn: PulsarConnection, consumer: Consumer) -> dict[str, Any]:
        return {"group": consumer.group, "client_id": consumer.client_id, "topic": consumer.topic,
                "broker": conn.broker, "queue_id": 0}

    def _receipt(self, conn: PulsarConnection, receipt: Any) -> None:
        sent = conn.sends.pop((receipt.producer_id, receipt.sequence_id), None)
        if sent is None or not receipt.HasField("message_id"):
            return
        topic, messages, batch = sent
        ledger, entry = receipt.message_id.ledgerId, receipt.message_id.entryId
        self._entries[(topic, ledger, entry)] = batch
        indices: list[int | None] = list(range(batch)) if batch is not None else [None]
        for index in indices:
            self._row(conn, "SEND", topic=topic, broker=conn.broker, queue_id=0, offset=offset_of(ledger, entry),
                      msg_id=msg_id_of(ledger, entry, index), tags="",
                      detail={"producer_id": receipt.producer_id, "sequence_id": receipt.sequence_id,
                              "messages": messages})

    def _subscribed(self, conn: PulsarConnection, consumer_id: int, group: str, name: str, topic: str,
                    sub_type: str) -> None:
        if consumer_id in conn.consumers:
            return  # a SUBSCRIBE repeated on the same connection: the broker keeps the consumer it has
        self._names[name] += 1
        client_id = name if self._names[name] == 1 else f"{name}#{self._names[name]}"
        consumer = conn.consumers[consumer_id] = Consumer(group, client_id, topic)
        self._row(conn, "SUBSCRIBE", group=group, client_id=consumer.client_id, topic=topic, expression="*",
                  model="CLUSTERING", broker=conn.broker, detail={"sub_type": sub_type, "consumer_name": name})

    def _message(self, conn: PulsarConnection, message: Any, rest: bytes) -> None:
        consumer = conn.consumers.get(message.consumer_id)
        if consumer is None:
            return
        ledger, entry = message.message_id.ledgerId, message.message_id.entryId
        batch = entry_batch(rest)
        self._entries[(consumer.topic, ledger, entry)] = batch
        ack_set = list(message.ack_set)
        if batch is None:
            indices: list[int | None] = [None]
        else:
            indices = list(_bits(ack_set, batch) if ack_set else range(batch))
        for index in indices:
            self._row(conn, "DISPATCH", **self._of(conn, consumer), offset=offset_of(ledger, entry),
                      msg_id=msg_id_of(ledger, entry, index),
                      detail={"batch_index": 0 if index is None else index, "batch_size": batch or 1,
                              "redelivery_count": message.redelivery_count})

    def _acks(self, conn: PulsarConnection, ack: Any) -> None:
        consumer = conn.consumers.get(ack.consumer_id)
        if consumer is None:
            return
        cumulative = ack.ack_type == pb.AckType_.Cumulative
        for mid in ack.message_id:
            batch = self._entries.get((consumer.topic, mid.ledgerId, mid.entryId))
            if batch is None and mid.HasField("batch_size") and mid.batch_size > 0:
                batch = mid.batch_size
            if batch is None:
                indices: list[int | None] = [None]
            elif mid.ack_set:
                unacked = set(_bits(list(mid.ack_set), batch))
                indices = [i for i in range(batch) if i not in unacked]
            else:
                indices = list(range(batch))
            for index in indices:
                msg_id = msg_id_of(mid.ledgerId, mid.entryId, index)
                self._row(conn, "ACK", group=consumer.group, client_id=consumer.client_id, topic=consumer.topic,
                          handle=msg_id, status="OK", msg_id=msg_id,
                          **({"detail": {"cumulative": True}} if cumulative else {}))

    def _leave(self, conn: PulsarConnection, consumer_id: int, why: str) -> None:
        consumer = conn.consumers.pop(consumer_id, None)
        if consumer is not None:
            self._row(conn, "UNSUBSCRIBE", group=consumer.group, client_id=consumer.client_id, topic=consumer.topic,
                      detail={"why": why})
