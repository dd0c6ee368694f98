"""Conversions between the v5 wire messages (``apache.rocketmq.v2``) and the core's protocol values.

This module owns the v5 <-> stored-message mapping (protocols/rocketmq-grpc-v5.md §5, the Java proxy's
GrpcConverter): ``message_id`` is the stored ``UNIQ_KEY`` property, ``tag`` the TAGS field, ``keys`` the KEYS
field joined by one blank, ``message_group`` the ``__SHARDINGKEY`` property, ``born_host`` the ``BORN_HOST``
property; the rest of the properties are the user's. So a message sent over remoting and received over gRPC (or
the other way round) reads the same on both wires: one store, one mapping.

``definition`` arguments are the generated ``definition_pb2`` module (typed Any: generated code has no stubs the
type checker may rely on).
"""

from __future__ import annotations

import hashlib
from typing import Any

from reference.broker.pop.protocol import PoppedMessage
from reference.rules.errors import InvalidRequest
from reference.rules.topics import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_ORIGIN_MESSAGE_ID,
    PROPERTY_ORIGIN_QUEUE_ID,
    PROPERTY_ORIGIN_QUEUE_OFFSET,
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
    PROPERTY_RETRY_TOPIC,
)
from reference.store.message import UNIQ_KEY, Message

#: Stored properties the v5 system properties map to (MessageConst).
PROPERTY_SHARDING_KEY = "__SHARDINGKEY"
PROPERTY_BORN_HOST = "BORN_HOST"
PROPERTY_TRACE_CONTEXT = "TRACE_CONTEXT"
#: Properties the broker and the wires keep for themselves: never shown as, nor accepted from, user properties.
SYSTEM_PROPERTY_KEYS = frozenset({
    UNIQ_KEY, PROPERTY_SHARDING_KEY, PROPERTY_BORN_HOST, PROPERTY_TRACE_CONTEXT, "TAGS", "KEYS", "POP_CK",
    "TRAN_MSG", "TIMER_DELIVER_MS", "TIMER_DELAY_SEC", "MSG_REGION", "TRACE_ON", "PGROUP", "WAIT",
    PROPERTY_DELAY_TIME_LEVEL, PROPERTY_REAL_TOPIC, PROPERTY_REAL_QUEUE_ID, PROPERTY_RETRY_TOPIC,
    PROPERTY_ORIGIN_MESSAGE_ID, PROPERTY_ORIGIN_QUEUE_ID, PROPERTY_ORIGIN_QUEUE_OFFSET,
    "POP_ORIGIN_QUEUE_ID", "POP_ORIGIN_QUEUE_OFFSET",
})
#: Separator of the stored KEYS field (MessageConst.KEY_SEPARATOR).
KEY_SEPARATOR = " "
#: v5 enum numbers the front writes (definition.proto): AddressScheme, Permission, MessageType, Encoding, Digest.
IPV4, IPV6 = 1, 2
PERMISSION_READ_WRITE = 4
NORMAL, FIFO, DELAY, TRANSACTION = 1, 2, 3, 4
ENCODING_IDENTITY = 1
DIGEST_MD5 = 2
#: v5 FilterType.TAG (UNSPECIFIED is taken as TAG): the only filter the reference applies.
FILTER_TAG = 1
#: What a topic of the reference accepts: the front stores normal and FIFO messages (docs/grpc.md).
ACCEPTED_MESSAGE_TYPES = (NORMAL, FIFO)
#: v5's master broker id: the client keeps only master queues (protocols/rocketmq-grpc-v5.md §2).
MASTER_BROKER_ID = 0


def resource_name(resource: Any, field: str) -> str:
    """The name of a ``Resource`` field; refused naming ``field`` when it is unset or empty."""
    name = str(resource.name) if resource is not None else ""
    if not name:
        raise InvalidRequest(field, "must name a resource (Resource.name is empty)")
    return name


def endpoints(definition: Any, address: tuple[str, int]) -> Any:
    """The front's own address as v5 ``Endpoints`` (the scheme must be set, §2)."""
    host, port = address
    scheme = IPV6 if ":" in host else IPV4
    return definition.Endpoints(scheme=scheme, addresses=[definition.Address(host=host, port=port)])


def message_queue(definition: Any, topic: str, queue_id: int, broker_name: str, address: tuple[str, int]) -> Any:
    return definition.MessageQueue(
        topic=definition.Resource(name=topic), id=queue_id, permission=PERMISSION_READ_WRITE,
        broker=definition.Broker(name=broker_name, id=MASTER_BROKER_ID, endpoints=endpoints(definition, address)),
        accept_message_types=list(ACCEPTED_MESSAGE_TYPES),
    )


def duration_ms(duration: Any) -> int:
    return int(duration.seconds) * 1000 + int(duration.nanos) // 1_000_000


def timestamp(ms: int) -> Any:
    from google.protobuf.timestamp_pb2 import Timestamp  # type: ignore[import-untyped]

    return Timestamp(seconds=ms // 1000, nanos=(ms % 1000) * 1_000_000)


def duration(ms: int) -> Any:
    from google.protobuf.duration_pb2 import Duration  # type: ignore[import-untyped]

    return Duration(seconds=ms // 1000, nanos=(ms % 1000) * 1_000_000)


def stored_message(wire: Any, topic: str, queue_id: int) -> Message:
    """A v5 ``Message`` as the core stores it (§5's mapping); refusals name the v5 field."""
    system = wire.system_properties
    message_id = str(system.message_id)
    if not message_id:
        raise InvalidRequest("message_id", "must be set (the client creates the message id)", "ILLEGAL_MESSAGE_ID")
    if not wire.body:
        raise InvalidRequest("body", "must not be empty", "MESSAGE_BODY_EMPTY")
    tag = str(system.tag) if system.HasField("tag") else None
    if tag is not None and (not tag.strip() or "||" in tag):
        raise InvalidRequest("tag", "must be non-blank and must not contain '||'", "ILLEGAL_MESSAGE_TAG")
    keys = [str(k) for k in system.keys]
    if any(not k.strip() or KEY_SEPARATOR in k for k in keys):
        raise InvalidRequest("keys", "each key must be non-blank and hold no blank", "ILLEGAL_MESSAGE_KEY")
    properties: dict[str, str] = {}
    for key, value in wire.user_properties.items():
        if key in SYSTEM_PROPERTY_KEYS or not key:
            raise InvalidRequest("user_properties", f"key {key!r} is reserved for the system or empty",
                                 "ILLEGAL_MESSAGE_PROPERTY_KEY")
        properties[key] = value
    properties[UNIQ_KEY] = message_id
    if system.HasField("message_group"):
        if not system.message_group:
            raise InvalidRequest("message_group", "must be non-empty when set", "ILLEGAL_MESSAGE_GROUP")
        properties[PROPERTY_SHARDING_KEY] = system.message_group
    if system.born_host:
        properties[PROPERTY_BORN_HOST] = system.born_host
    if system.HasField("trace_context"):
        properties[PROPERTY_TRACE_CONTEXT] = system.trace_context
    born = int(system.born_timestamp.seconds) * 1000 + int(system.born_timestamp.nanos) // 1_000_000
    return Message(topic, bytes(wire.body), queue_id, tag, KEY_SEPARATOR.join(keys) or None, properties, born or None)


def wire_message(definition: Any, popped: PoppedMessage, store_host: str) -> Any:
    """A popped message as the v5 ``Message`` a consumer receives (§3.6's per-message fields)."""
    props = popped.properties
    system = definition.SystemProperties(
        keys=popped.keys.split(KEY_SEPARATOR) if popped.keys else [],
        message_id=props.get(UNIQ_KEY) or popped.msg_id,
        body_digest=definition.Digest(type=DIGEST_MD5, checksum=hashlib.md5(popped.body).hexdigest().upper()),
        body_encoding=ENCODING_IDENTITY,
        message_type=FIFO if PROPERTY_SHARDING_KEY in props else NORMAL,
        born_timestamp=timestamp(popped.born_timestamp),
        born_host=props.get(PROPERTY_BORN_HOST, ""),
        store_timestamp=timestamp(popped.store_timestamp),
        store_host=store_host,
        receipt_handle=popped.handle,
        queue_id=popped.queue_id,
        queue_offset=popped.queue_offset,
        delivery_attempt=popped.reconsume_times + 1,
    )
    if popped.tags:
        system.tag = popped.tags
    if PROPERTY_SHARDING_KEY in props:
        system.message_group = props[PROPERTY_SHARDING_KEY]
    if PROPERTY_TRACE_CONTEXT in props:
        system.trace_context = props[PROPERTY_TRACE_CONTEXT]
    user = {k: v for k, v in props.items() if k not in SYSTEM_PROPERTY_KEYS}
    return definition.Message(
        topic=definition.Resource(name=popped.topic), user_properties=user, system_properties=system,
        body=popped.body,
    )
