"""The Pulsar binary protocol's protobuf messages (``pulsar.proto``), built at import from our own table.

Why our own: no registry artifact carries the published ``PulsarApi.proto`` (checked: the Maven jars
``org.apache.pulsar:pulsar-common`` 4.0.8 and its ``-sources`` jar hold only LightProto-generated Java; the PyPI
wheel ``pulsar-client`` 3.13.0 and the npm packages ``pulsar-client`` 1.18.0 and ``pulsar-flex`` 1.1.1 hold compiled
or generated code only). So the messages a minimal broker and its client need are written here, field by field,
from the wire notes (pulsar-binary §4.2), and checked byte for byte against the real client on the wire
(``tests/pulsar_front/test_codec.py``). The table becomes a ``FileDescriptorProto`` and the protobuf runtime makes
the classes: no ``protoc``, no generated file, nothing cached.

It is **proto2** on purpose: the client's parser enforces ``required`` fields and needs zero values present
(consumer id 0, ``response: Success``), which proto3's implicit presence would drop (§4, §18.1). Fields this
broker never reads are left out: protobuf keeps them as unknown fields, harmless.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

PACKAGE = "pulsar.proto"

#: Enums: name -> ((value name, number), ...).
ENUMS: dict[str, tuple[tuple[str, int], ...]] = {
    "CompressionType": (("NONE", 0), ("LZ4", 1), ("ZLIB", 2), ("ZSTD", 3), ("SNAPPY", 4)),
    "ServerError": tuple((name, i) for i, name in enumerate((
        "UnknownError", "MetadataError", "PersistenceError", "AuthenticationError", "AuthorizationError",
        "ConsumerBusy", "ServiceNotReady", "ProducerBlockedQuotaExceededError",
        "ProducerBlockedQuotaExceededException", "ChecksumError", "UnsupportedVersionError", "TopicNotFound",
        "SubscriptionNotFound", "ConsumerNotFound", "TooManyRequests", "TopicTerminatedError", "ProducerBusy",
        "InvalidTopicName", "IncompatibleSchema", "ConsumerAssignError", "TransactionCoordinatorNotFound",
        "InvalidTxnStatus", "NotAllowedError", "TransactionConflict", "TransactionNotFound", "ProducerFenced",
    ))),
    "SubType": (("Exclusive", 0), ("Shared", 1), ("Failover", 2), ("Key_Shared", 3)),
    "InitialPosition": (("Latest", 0), ("Earliest", 1)),
    "AckType": (("Individual", 0), ("Cumulative", 1)),
    "ValidationError": (("UncompressedSizeCorruption", 0), ("DecompressionError", 1), ("ChecksumMismatch", 2),
                        ("BatchDeSerializeError", 3), ("DecryptionError", 4)),
    "LookupType": (("Redirect", 0), ("Connect", 1), ("Failed", 2)),
    "PartitionedResponse": (("Success", 0), ("Failed", 1)),
    "Type": (
        ("CONNECT", 2), ("CONNECTED", 3), ("SUBSCRIBE", 4), ("PRODUCER", 5), ("SEND", 6), ("SEND_RECEIPT", 7),
        ("SEND_ERROR", 8), ("MESSAGE", 9), ("ACK", 10), ("FLOW", 11), ("UNSUBSCRIBE", 12), ("SUCCESS", 13),
        ("ERROR", 14), ("CLOSE_PRODUCER", 15), ("CLOSE_CONSUMER", 16), ("PRODUCER_SUCCESS", 17), ("PING", 18),
        ("PONG", 19), ("REDELIVER_UNACKNOWLEDGED_MESSAGES", 20), ("PARTITIONED_METADATA", 21),
        ("PARTITIONED_METADATA_RESPONSE", 22), ("LOOKUP", 23), ("LOOKUP_RESPONSE", 24), ("SEEK", 28),
        ("GET_LAST_MESSAGE_ID", 29), ("GET_LAST_MESSAGE_ID_RESPONSE", 30), ("GET_SCHEMA", 34),
        ("ACK_RESPONSE", 38), ("GET_OR_CREATE_SCHEMA", 39),
    ),
}

R, OPT, REP = "required", "optional", "repeated"
#: Messages: name -> ((number, name, label, type[, default]), ...). A type that is not a scalar names an enum or
#: a message of this table.
MESSAGES: dict[str, tuple[tuple[Any, ...], ...]] = {
    "MessageIdData": ((1, "ledgerId", R, "uint64"), (2, "entryId", R, "uint64"), (3, "partition", OPT, "int32", "-1"),
                      (4, "batch_index", OPT, "int32", "-1"), (5, "ack_set", REP, "int64"),
                      (6, "batch_size", OPT, "int32")),
    "KeyValue": ((1, "key", R, "string"), (2, "value", R, "string")),
    "MessageMetadata": ((1, "producer_name", R, "string"), (2, "sequence_id", R, "uint64"),
                        (3, "publish_time", R, "uint64"), (4, "properties", REP, "KeyValue"),
                        (6, "partition_key", OPT, "string"), (8, "compression", OPT, "CompressionType"),
                        (11, "num_messages_in_batch", OPT, "int32", "1"), (19, "deliver_at_time", OPT, "int64"),
                        (20, "marker_type", OPT, "int32")),
    "SingleMessageMetadata": ((1, "properties", REP, "KeyValue"), (2, "partition_key", OPT, "string"),
                              (3, "payload_size", R, "int32"), (8, "sequence_id", OPT, "uint64")),
    "FeatureFlags": ((1, "supports_auth_refresh", OPT, "bool"), (2, "supports_broker_entry_metadata", OPT, "bool"),
                     (3, "supports_partial_producer", OPT, "bool"), (4, "supports_topic_watchers", OPT, "bool")),
    "CommandConnect": ((1, "client_version", R, "string"), (4, "protocol_version", OPT, "int32", "0"),
                       (5, "auth_method_name", OPT, "string"), (10, "feature_flags", OPT, "FeatureFlags")),
    "CommandConnected": ((1, "server_version", R, "string"), (2, "protocol_version", OPT, "int32", "0"),
                         (3, "max_message_size", OPT, "int32"), (4, "feature_flags", OPT, "FeatureFlags")),
    "CommandPartitionedTopicMetadata": ((1, "topic", R, "string"), (2, "request_id", R, "uint64")),
    "CommandPartitionedTopicMetadataResponse": ((1, "partitions", OPT, "uint32"), (2, "request_id", R, "uint64"),
                                                (3, "response", OPT, "PartitionedResponse"),
                                                (4, "error", OPT, "ServerError"), (5, "message", OPT, "string")),
    "CommandLookupTopic": ((1, "topic", R, "string"), (2, "request_id", R, "uint64"),
                           (3, "authoritative", OPT, "bool", "false"), (7, "advertised_listener_name", OPT, "string")),
    "CommandLookupTopicResponse": ((1, "brokerServiceUrl", OPT, "string"), (3, "response", OPT, "LookupType"),
                                   (4, "request_id", R, "uint64"), (5, "authoritative", OPT, "bool", "false"),
                                   (6, "error", OPT, "ServerError"), (7, "message", OPT, "string")),
    "CommandProducer": ((1, "topic", R, "string"), (2, "producer_id", R, "uint64"), (3, "request_id", R, "uint64"),
                        (4, "producer_name", OPT, "string"), (5, "encrypted", OPT, "bool", "false"),
                        (6, "metadata", REP, "KeyValue"), (8, "epoch", OPT, "uint64", "0"),
                        (9, "user_provided_producer_name", OPT, "bool", "true"),
                        (10, "producer_access_mode", OPT, "int32", "0"), (11, "topic_epoch", OPT, "uint64"),
                        (12, "txn_enabled", OPT, "bool", "false"), (13, "initial_subscription_name", OPT, "string")),
    "CommandProducerSuccess": ((1, "request_id", R, "uint64"), (2, "producer_name", R, "string"),
                               (3, "last_sequence_id", OPT, "int64", "-1"), (4, "schema_version", OPT, "bytes")),
    "CommandSend": ((1, "producer_id", R, "uint64"), (2, "sequence_id", R, "uint64"),
                    (3, "num_messages", OPT, "int32", "1"), (6, "highest_sequence_id", OPT, "uint64", "0")),
    "CommandSendReceipt": ((1, "producer_id", R, "uint64"), (2, "sequence_id", R, "uint64"),
                           (3, "message_id", OPT, "MessageIdData"), (4, "highest_sequence_id", OPT, "uint64", "0")),
    "CommandSendError": ((1, "producer_id", R, "uint64"), (2, "sequence_id", R, "uint64"),
                         (3, "error", R, "ServerError"), (4, "message", R, "string")),
    "CommandSubscribe": ((1, "topic", R, "string"), (2, "subscription", R, "string"), (3, "subType", R, "SubType"),
                         (4, "consumer_id", R, "uint64"), (5, "request_id", R, "uint64"),
                         (6, "consumer_name", OPT, "string"), (7, "priority_level", OPT, "int32"),
                         (8, "durable", OPT, "bool", "true"), (9, "start_message_id", OPT, "MessageIdData"),
                         (10, "metadata", REP, "KeyValue"), (11, "read_compacted", OPT, "bool"),
                         (13, "initialPosition", OPT, "InitialPosition", "Latest"),
                         (14, "replicate_subscription_state", OPT, "bool"),
                         (15, "force_topic_creation", OPT, "bool", "true"),
                         (16, "start_message_rollback_duration_sec", OPT, "uint64", "0"),
                         (18, "subscription_properties", REP, "KeyValue"), (19, "consumer_epoch", OPT, "uint64")),
    "CommandSuccess": ((1, "request_id", R, "uint64"),),
    "CommandError": ((1, "request_id", R, "uint64"), (2, "error", R, "ServerError"), (3, "message", R, "string")),
    "CommandFlow": ((1, "consumer_id", R, "uint64"), (2, "messagePermits", R, "uint32")),
    "CommandMessage": ((1, "consumer_id", R, "uint64"), (2, "message_id", R, "MessageIdData"),
                       (3, "redelivery_count", OPT, "uint32", "0"), (4, "ack_set", REP, "int64")),
    "CommandAck": ((1, "consumer_id", R, "uint64"), (2, "ack_type", R, "AckType"),
                   (3, "message_id", REP, "MessageIdData"), (4, "validation_error", OPT, "ValidationError"),
                   (8, "request_id", OPT, "uint64")),
    "CommandAckResponse": ((1, "consumer_id", R, "uint64"), (6, "request_id", OPT, "uint64")),
    "CommandRedeliverUnacknowledgedMessages": ((1, "consumer_id", R, "uint64"),
                                               (2, "message_ids", REP, "MessageIdData")),
    "CommandUnsubscribe": ((1, "consumer_id", R, "uint64"), (2, "request_id", R, "uint64")),
    "CommandCloseProducer": ((1, "producer_id", R, "uint64"), (2, "request_id", R, "uint64")),
    "CommandCloseConsumer": ((1, "consumer_id", R, "uint64"), (2, "request_id", R, "uint64")),
    "CommandPing": (),
    "CommandPong": (),
    "CommandSeek": ((1, "consumer_id", R, "uint64"), (2, "request_id", R, "uint64")),
    "CommandGetLastMessageId": ((1, "consumer_id", R, "uint64"), (2, "request_id", R, "uint64")),
    "CommandGetSchema": ((1, "request_id", R, "uint64"), (2, "topic", R, "string")),
    "CommandGetOrCreateSchema": ((1, "request_id", R, "uint64"), (2, "topic", R, "string")),
}

#: BaseCommand: field 1 is the type; each command's sub-message sits in the field numbered as its type (§4).
COMMAND_FIELDS: tuple[tuple[int, str, str], ...] = (
    (2, "connect", "CommandConnect"), (3, "connected", "CommandConnected"), (4, "subscribe", "CommandSubscribe"),
    (5, "producer", "CommandProducer"), (6, "send", "CommandSend"), (7, "send_receipt", "CommandSendReceipt"),
    (8, "send_error", "CommandSendError"), (9, "message", "CommandMessage"), (10, "ack", "CommandAck"),
    (11, "flow", "CommandFlow"), (12, "unsubscribe", "CommandUnsubscribe"), (13, "success", "CommandSuccess"),
    (14, "error", "CommandError"), (15, "close_producer", "CommandCloseProducer"),
    (16, "close_consumer", "CommandCloseConsumer"), (17, "producer_success", "CommandProducerSuccess"),
    (18, "ping", "CommandPing"), (19, "pong", "CommandPong"),
    (20, "redeliverUnacknowledgedMessages", "CommandRedeliverUnacknowledgedMessages"),
    (21, "partitionMetadata", "CommandPartitionedTopicMetadata"),
    (22, "partitionMetadataResponse", "CommandPartitionedTopicMetadataResponse"),
    (23, "lookupTopic", "CommandLookupTopic"), (24, "lookupTopicResponse", "CommandLookupTopicResponse"),
    (28, "seek", "CommandSeek"), (29, "getLastMessageId", "CommandGetLastMessageId"),
    (34, "getSchema", "CommandGetSchema"), (38, "ackResponse", "CommandAckResponse"),
    (39, "getOrCreateSchema", "CommandGetOrCreateSchema"),
)

_SCALARS = {
    "uint64": descriptor_pb2.FieldDescriptorProto.TYPE_UINT64,
    "int64": descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
    "uint32": descriptor_pb2.FieldDescriptorProto.TYPE_UINT32,
    "int32": descriptor_pb2.FieldDescriptorProto.TYPE_INT32,
    "string": descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
    "bytes": descriptor_pb2.FieldDescriptorProto.TYPE_BYTES,
    "bool": descriptor_pb2.FieldDescriptorProto.TYPE_BOOL,
}
_LABELS = {R: descriptor_pb2.FieldDescriptorProto.LABEL_REQUIRED,
           OPT: descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
           REP: descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED}


def _field(msg: descriptor_pb2.DescriptorProto, spec: tuple[Any, ...]) -> None:
    number, name, label, kind = spec[:4]
    f = msg.field.add(name=name, number=number, label=_LABELS[label])
    if kind in _SCALARS:
        f.type = _SCALARS[kind]
    elif kind in ENUMS:
        f.type, f.type_name = descriptor_pb2.FieldDescriptorProto.TYPE_ENUM, f".{PACKAGE}.{kind}"
    else:
        f.type, f.type_name = descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE, f".{PACKAGE}.{kind}"
    if len(spec) > 4:
        f.default_value = spec[4]


def _file() -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto(name="mqtck/pulsar_wire.proto", package=PACKAGE, syntax="proto2")
    for name, values in ENUMS.items():
        enum = fd.enum_type.add(name=name)
        for value, number in values:
            enum.value.add(name=f"{name}_{value}" if name in _PREFIXED else value, number=number)
    for name, fields in MESSAGES.items():
        msg = fd.message_type.add(name=name)
        for spec in fields:
            _field(msg, spec)
    base = fd.message_type.add(name="BaseCommand")
    _field(base, (1, "type", R, "Type"))
    for number, name, kind in COMMAND_FIELDS:
        _field(base, (number, name, OPT, kind))
    return fd


#: Enums whose value names collide with another enum's in the one protobuf scope (proto2 enum values are siblings
#: of their enum: ``Failed`` is a LookupType and a PartitionedResponse): their values get the enum's name as a prefix
#: in the descriptor; on the wire only the numbers count, and :data:`pb` names them without it.
_PREFIXED = frozenset({"PartitionedResponse"})


def _build() -> SimpleNamespace:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(_file())
    classes = {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{PACKAGE}.{name}"))
               for name in (*MESSAGES, "BaseCommand")}
    enums = {}
    for name, values in ENUMS.items():
        enums[name] = SimpleNamespace(**{value: number for value, number in values})
    return SimpleNamespace(**classes, **{f"{name}_": e for name, e in enums.items()})


#: The message classes by name (``pb.BaseCommand``, ``pb.CommandFlow`` …) and the enums' numbers by value name
#: (``pb.Type_.FLOW``, ``pb.ServerError_.ConsumerBusy``, ``pb.SubType_.Shared`` …).
pb = _build()
