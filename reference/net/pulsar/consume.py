"""Consumer commands over the permit service: SUBSCRIBE, FLOW, ACK, REDELIVER_UNACKNOWLEDGED_MESSAGES,
CLOSE_CONSUMER, UNSUBSCRIBE; and :class:`ConsumerChannel`, which turns dispatched messages into MESSAGE frames.

The permit service dispatches *messages* (an entry's batch indices); the wire sends *entries*: the messages of one
entry in one dispatch become one MESSAGE carrying the stored entry verbatim, with an ``ack_set`` when only some of
its indices are sent (bit i set: index i is delivered, pulsar-binary §9.2), and the highest redelivery count of
them. Key_Shared is refused: seed 003 describes no key-based dispatch, and the reference has none.
"""

from __future__ import annotations

import logging

from reference.broker.permits.protocol import DispatchedMessage, InitialPosition, Position, SubType
from reference.net.pulsar.context import ConnectionContext, ConsumerRef
from reference.net.pulsar.schema import pb
from reference.net.pulsar.topics import LEDGER_ID, entry_offset
from reference.rules.errors import InvalidRequest

log = logging.getLogger("mqtck.pulsar")

#: The first protocol version whose clients read batch entries (Pulsar's ProtocolVersion v4, "batch messages").
BATCH_VERSION = 4

SUB_TYPES = {pb.SubType_.Exclusive: SubType.EXCLUSIVE, pb.SubType_.Shared: SubType.SHARED,
             pb.SubType_.Failover: SubType.FAILOVER}


class ConsumerChannel:
    """The permit service's channel for one wire consumer: each dispatch goes out as MESSAGE frames."""

    def __init__(self, conn: ConnectionContext, consumer_id: int) -> None:
        self.conn = conn
        self.consumer_id = consumer_id
        self.key = f"{conn.name}/{consumer_id}"

    def deliver_messages(self, group: str, topic: str, messages: list[DispatchedMessage]) -> None:
        by_entry: dict[int, list[DispatchedMessage]] = {}
        for m in messages:
            by_entry.setdefault(m.position.offset, []).append(m)
        for offset, parts in by_entry.items():
            raw = self.conn.front.entry_bytes(group, topic, offset)
            if raw is None:  # removed by retention between the read and now: nothing to send
                continue
            if parts[0].batch_size > 1 and self.conn.protocol_version < BATCH_VERSION:
                # Seed 003 line 62 (FLOW-15): a consumer that cannot read a batch is not sent one; its connection
                # is closed, and what it was dispatched goes back to the subscription when its consumers close.
                log.warning("%s: consumer %d does not support batch messages (protocol v%d): closing", self.conn.name,
                            self.consumer_id, self.conn.protocol_version)
                self.conn.abort()
                return
            out = pb.BaseCommand(type=pb.Type_.MESSAGE)
            out.message.consumer_id = self.consumer_id
            out.message.message_id.ledgerId = LEDGER_ID
            out.message.message_id.entryId = offset
            out.message.message_id.partition = -1
            count = max(m.redelivery_count for m in parts)
            if count:
                out.message.redelivery_count = count
            size = parts[0].batch_size
            if size > 1 and len(parts) < size:
                words = [0] * ((size + 63) // 64)
                for m in parts:
                    words[m.position.batch_index // 64] |= 1 << (m.position.batch_index % 64)
                out.message.ack_set.extend(w - (1 << 64) if w >= 1 << 63 else w for w in words)
            self.conn.write(out, raw)


def subscribe(conn: ConnectionContext, cmd: object) -> None:
    req = cmd.subscribe  # type: ignore[attr-defined]
    sub_type = SUB_TYPES.get(req.subType)
    if sub_type is None:
        raise InvalidRequest("subType", "Key_Shared is not served: seed 003 describes no key-based dispatch "
                             "(Exclusive, Shared and Failover are)")
    topic = conn.front.ensure_topic(req.topic)
    known = conn.consumers.get(req.consumer_id)
    if known is not None and (known.group, known.topic) != (req.subscription, topic):
        raise InvalidRequest("consumer_id", f"{req.consumer_id} is already a consumer of this connection",
                             "CONSUMER_BUSY")
    # The same consumer subscribing again keeps its client id, so that the permit service refuses it by its own
    # rules and in their order (another subscription type first, then a consumer already subscribed).
    client_id = known.client_id if known is not None else f"{req.consumer_name or 'consumer'}#{conn.name}/" \
        f"{req.consumer_id}"
    earliest = req.initialPosition == pb.InitialPosition_.Earliest
    initial = InitialPosition.EARLIEST if earliest else InitialPosition.LATEST
    conn.front.broker().subscribe_permits(req.subscription, topic, client_id, ConsumerChannel(conn, req.consumer_id),
                                          sub_type, 0, initial)
    conn.consumers[req.consumer_id] = ConsumerRef(req.consumer_id, req.subscription, topic, client_id, sub_type)
    conn.success(req.request_id)


def flow(conn: ConnectionContext, cmd: object) -> None:
    req = cmd.flow  # type: ignore[attr-defined]
    ref = conn.consumer(req.consumer_id)
    conn.front.broker().flow(ref.group, ref.client_id, ref.topic, req.messagePermits)


def _indices(conn: ConnectionContext, ref: ConsumerRef, offset: int, ack_set: list[int]) -> list[Position]:
    """The positions of an entry an ACK or REDELIVER names: all its messages, or with an ack_set (bit i set: index
    i still unacknowledged) the ones whose bit is clear."""
    size = conn.front.entry_size(ref.group, ref.topic, offset)
    if size is None:
        return []
    if not ack_set:
        return [Position(offset, i) for i in range(size)]
    return [Position(offset, i) for i in range(size)
            if i // 64 >= len(ack_set) or not (ack_set[i // 64] >> (i % 64)) & 1]


def ack(conn: ConnectionContext, cmd: object) -> None:
    req = cmd.ack  # type: ignore[attr-defined]
    ref = conn.consumer(req.consumer_id)
    positions: list[Position] = []
    if req.ack_type == pb.AckType_.Cumulative:
        if ref.sub_type is SubType.SHARED or len(req.message_id) != 1:  # Java ignores these (pulsar-binary §10)
            return
        last = entry_offset(req.message_id[0].ledgerId, req.message_id[0].entryId)
        if last is None:
            return
        for offset in range(conn.front.mark_delete(ref.group, ref.topic), last + 1):
            positions += _indices(conn, ref, offset, [])
    else:
        for mid in req.message_id:
            named = entry_offset(mid.ledgerId, mid.entryId)
            if named is not None:
                positions += _indices(conn, ref, named, list(mid.ack_set))
    conn.front.broker().ack_permits(ref.group, ref.client_id, ref.topic, positions)
    if req.HasField("request_id"):
        out = pb.BaseCommand(type=pb.Type_.ACK_RESPONSE)
        out.ackResponse.consumer_id = req.consumer_id
        out.ackResponse.request_id = req.request_id
        conn.write(out)


def redeliver(conn: ConnectionContext, cmd: object) -> None:
    """Shared: the named entries (all pending without ids); exclusive and failover: a rewind (§12.2)."""
    req = cmd.redeliverUnacknowledgedMessages  # type: ignore[attr-defined]
    ref = conn.consumer(req.consumer_id)
    positions: list[Position] | None = None
    if ref.sub_type is SubType.SHARED and len(req.message_ids):
        positions = []
        for mid in req.message_ids:
            offset = entry_offset(mid.ledgerId, mid.entryId)
            if offset is not None:
                positions += _indices(conn, ref, offset, [])
    conn.front.broker().redeliver_unacknowledged(ref.group, ref.client_id, ref.topic, positions)


def close_consumer(conn: ConnectionContext, cmd: object) -> None:
    req = cmd.close_consumer  # type: ignore[attr-defined]
    conn.close_consumer(req.consumer_id)
    conn.success(req.request_id)


def unsubscribe(conn: ConnectionContext, cmd: object) -> None:
    req = cmd.unsubscribe  # type: ignore[attr-defined]
    conn.consumer(req.consumer_id)
    raise InvalidRequest("unsubscribe", "deleting a subscription is not served by the mqtck reference front")


HANDLERS = {
    pb.Type_.SUBSCRIBE: subscribe,
    pb.Type_.FLOW: flow,
    pb.Type_.ACK: ack,
    pb.Type_.REDELIVER_UNACKNOWLEDGED_MESSAGES: redeliver,
    pb.Type_.CLOSE_CONSUMER: close_consumer,
    pb.Type_.UNSUBSCRIBE: unsubscribe,
}
