"""Session commands: CONNECT, the lookups (answered with this broker itself), PING/PONG, and refusals of what this
front does not serve, so that a client waiting on a request id is answered at once (pulsar-binary §17.15)."""

from __future__ import annotations

from collections.abc import Callable

from reference.net.pulsar.context import ConnectionContext
from reference.net.pulsar.schema import pb
from reference.net.pulsar.topics import store_topic
from reference.rules.errors import InvalidRequest

#: The newest protocol version this front speaks (the one pulsar-client 3.13 / libpulsar 4.2.0 sends).
PROTOCOL_VERSION = 20
SERVER_VERSION = "mqtck-reference"


def connect(conn: ConnectionContext, cmd: object) -> None:
    """CONNECTED with ``protocol_version = min(client's, ours)``, never omitted (an absent one means v0, §5)."""
    version = min(cmd.connect.protocol_version, PROTOCOL_VERSION)  # type: ignore[attr-defined]
    conn.protocol_version = version
    conn.connected = True
    out = pb.BaseCommand(type=pb.Type_.CONNECTED)
    out.connected.server_version = SERVER_VERSION
    out.connected.protocol_version = version
    out.connected.max_message_size = conn.front.max_message_size
    conn.write(out)


def partitioned_metadata(conn: ConnectionContext, cmd: object) -> None:
    """Every topic is non-partitioned here (a partition is a topic of its own): ``partitions: 0``."""
    req = cmd.partitionMetadata  # type: ignore[attr-defined]
    out = pb.BaseCommand(type=pb.Type_.PARTITIONED_METADATA_RESPONSE)
    out.partitionMetadataResponse.request_id = req.request_id
    try:
        store_topic(req.topic)
        out.partitionMetadataResponse.partitions = 0
        out.partitionMetadataResponse.response = pb.PartitionedResponse_.Success
    except InvalidRequest as exc:
        out.partitionMetadataResponse.response = pb.PartitionedResponse_.Failed
        out.partitionMetadataResponse.error = pb.ServerError_.InvalidTopicName
        out.partitionMetadataResponse.message = f"{exc.field}: {exc.rule}"
    conn.write(out)


def lookup(conn: ConnectionContext, cmd: object) -> None:
    """``Connect`` to the exact service URL clients were given, so they keep their one connection (§6)."""
    req = cmd.lookupTopic  # type: ignore[attr-defined]
    out = pb.BaseCommand(type=pb.Type_.LOOKUP_RESPONSE)
    out.lookupTopicResponse.request_id = req.request_id
    try:
        store_topic(req.topic)
        out.lookupTopicResponse.brokerServiceUrl = conn.front.service_url
        out.lookupTopicResponse.response = pb.LookupType_.Connect
        out.lookupTopicResponse.authoritative = True
    except InvalidRequest as exc:
        out.lookupTopicResponse.response = pb.LookupType_.Failed
        out.lookupTopicResponse.error = pb.ServerError_.InvalidTopicName
        out.lookupTopicResponse.message = f"{exc.field}: {exc.rule}"
    conn.write(out)


def ping(conn: ConnectionContext, cmd: object) -> None:
    out = pb.BaseCommand(type=pb.Type_.PONG)
    out.pong.SetInParent()
    conn.write(out)


def pong(conn: ConnectionContext, cmd: object) -> None:
    """The answer to a PING of ours; this front sends none, and a stray PONG changes nothing."""


def not_served(field: str) -> Callable[[ConnectionContext, object], None]:
    def refuse(conn: ConnectionContext, cmd: object) -> None:
        raise InvalidRequest(field, "not served by the mqtck reference front (docs/pulsar.md)")

    return refuse


HANDLERS = {
    pb.Type_.CONNECT: connect,
    pb.Type_.PARTITIONED_METADATA: partitioned_metadata,
    pb.Type_.LOOKUP: lookup,
    pb.Type_.PING: ping,
    pb.Type_.PONG: pong,
    pb.Type_.SEEK: not_served("seek"),
    pb.Type_.GET_LAST_MESSAGE_ID: not_served("getLastMessageId"),
    pb.Type_.GET_SCHEMA: not_served("getSchema"),
    pb.Type_.GET_OR_CREATE_SCHEMA: not_served("getOrCreateSchema"),
}
