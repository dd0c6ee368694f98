"""Producer commands: PRODUCER, SEND (single and batched entries), CLOSE_PRODUCER.

A SEND's entry is stored as it came, one store message per entry whatever its batch holds (the broker never
opens a batch, pulsar-binary §8.2), with ``NUM_MESSAGES_IN_BATCH`` set for a batch so that the permit dispatcher
charges one permit per message. Receipts go out in the order of the SENDs, each with the entry's message id.
"""

from __future__ import annotations

from reference.broker.permits.batch import NUM_MESSAGES_IN_BATCH
from reference.broker.permits.entry_filter import DELIVER_AT_TIME, MARKER_TYPE
from reference.net.pulsar import frame
from reference.net.pulsar.context import ConnectionContext
from reference.net.pulsar.errors import send_error_command
from reference.net.pulsar.schema import pb
from reference.net.pulsar.topics import LEDGER_ID
from reference.rules.errors import InvalidRequest
from reference.store.message import Message


def producer(conn: ConnectionContext, cmd: object) -> None:
    req = cmd.producer  # type: ignore[attr-defined]
    topic = conn.front.ensure_topic(req.topic)
    if req.producer_id in conn.producers and conn.producers[req.producer_id][0] != topic:
        raise InvalidRequest("producer_id", f"{req.producer_id} is already a producer of another topic", "ProducerBusy")
    name = req.producer_name or conn.front.producer_name()
    conn.producers[req.producer_id] = (topic, name)
    out = pb.BaseCommand(type=pb.Type_.PRODUCER_SUCCESS)
    out.producer_success.request_id = req.request_id
    out.producer_success.producer_name = name
    out.producer_success.last_sequence_id = -1
    # The Java client (pulsar-client 4.0.7) reads schema_version unconditionally and drops the connection without it
    # ("Field 'schema_version' is not set"); the Java broker always sets it, empty for a producer without a schema.
    out.producer_success.schema_version = b""
    conn.write(out)


def send(conn: ConnectionContext, cmd: object, after: bytes) -> None:
    req = cmd.send  # type: ignore[attr-defined]
    known = conn.producers.get(req.producer_id)
    try:
        if known is None:
            raise InvalidRequest("producer_id", f"{req.producer_id} is not a producer of this connection")
        entry = frame.read_entry(after)
    except InvalidRequest as exc:
        conn.write(send_error_command(req.producer_id, req.sequence_id, exc))
        return
    properties = {NUM_MESSAGES_IN_BATCH: str(entry.size)} if entry.size > 1 else {}
    properties.update(filter_properties(entry.metadata))
    result = conn.front.broker().send(Message(known[0], entry.raw, 0, properties=properties), known[1])
    out = pb.BaseCommand(type=pb.Type_.SEND_RECEIPT)
    out.send_receipt.producer_id = req.producer_id
    out.send_receipt.sequence_id = req.sequence_id
    out.send_receipt.message_id.ledgerId = LEDGER_ID
    out.send_receipt.message_id.entryId = result.queue_offset
    out.send_receipt.highest_sequence_id = req.highest_sequence_id
    conn.write(out)


def filter_properties(metadata: object) -> dict[str, str]:
    """What the dispatcher's entry filter reads of an entry's MessageMetadata (FLOW-12): its delivery time and
    marker type, as the store properties of :mod:`reference.broker.permits.entry_filter`."""
    out = {}
    if metadata.HasField("deliver_at_time"):  # type: ignore[attr-defined]
        out[DELIVER_AT_TIME] = str(max(metadata.deliver_at_time, 0))  # type: ignore[attr-defined]
    if metadata.HasField("marker_type"):  # type: ignore[attr-defined]
        out[MARKER_TYPE] = str(metadata.marker_type)  # type: ignore[attr-defined]
    return out


def close_producer(conn: ConnectionContext, cmd: object) -> None:
    req = cmd.close_producer  # type: ignore[attr-defined]
    conn.producers.pop(req.producer_id, None)
    conn.success(req.request_id)


HANDLERS = {
    pb.Type_.PRODUCER: producer,
    pb.Type_.CLOSE_PRODUCER: close_producer,
}
#: Commands followed by an entry (called with the bytes after the command).
PAYLOAD_HANDLERS = {pb.Type_.SEND: send}
