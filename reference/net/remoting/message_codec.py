"""Byte layouts inside remoting bodies (protocols/rocketmq-remoting.md §5.3, §6).

* the properties string (§6.1): ``name \\x01 value \\x02`` pairs;
* the stored-message record (§6.2), V1 magic and IPv4 hosts only, because that is all the C++ 1.2.3
  client decodes; a PULL_MESSAGE body is such records back to back, and :func:`decode_records` reads
  one back (for the remoting conformance target and the tests);
* the batch body of a SEND_MESSAGE with ``batch="1"`` (§5.3);
* message ids (§6.4): the offset message id is :func:`reference.store.message.offset_msg_id`.

Every length field is exact: the C++ client walks records field by field and never skips by TOTALSIZE.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from reference.store.message import UNIQ_KEY, StoredMessage, offset_msg_id

NAME_VALUE_SEPARATOR = "\x01"
PROPERTY_SEPARATOR = "\x02"
#: Well-known properties the store keeps in their own fields (StoredMessage.tags / .keys).
PROPERTY_TAGS = "TAGS"
PROPERTY_KEYS = "KEYS"
#: MAGICCODE of a V1 record (RocketMQ's MESSAGE_MAGIC_CODE, -626843481 as a signed int32).
MESSAGE_MAGIC_V1 = 0xDAA320A7
#: MessageSysFlag bit 0: the body is zlib-compressed (the client deflates bodies >= 4 KiB).
SYSFLAG_COMPRESSED = 0x1
#: MessageSysFlag bits this codec never emits: IPv6 born / store host (C++ 1.2.3 cannot read them).
SYSFLAG_BORNHOST_V6 = 0x10
SYSFLAG_STOREHOST_V6 = 0x20
#: Longest topic in a record: one *signed* length byte in the C++ decoder.
MAX_TOPIC_BYTES = 127
#: Longest properties string in a record: a signed int16 length.
MAX_PROPERTIES_BYTES = 0x7FFF

# TOTALSIZE MAGIC BODYCRC QUEUEID FLAG QUEUEOFFSET PHYSICALOFFSET SYSFLAG BORNTIMESTAMP BORNHOST
# STORETIMESTAMP STOREHOST RECONSUMETIMES PREPAREDTRANSACTIONOFFSET BODYLEN
_RECORD_HEAD = struct.Struct(">iIiiiqqiq8sq8siqi")
_TOPIC_LEN = struct.Struct(">B")
_PROPS_LEN = struct.Struct(">h")
#: Bytes of a record besides body, topic and properties (91, §6.2).
RECORD_FIXED_BYTES = _RECORD_HEAD.size + _TOPIC_LEN.size + _PROPS_LEN.size
# TOTALSIZE MAGIC BODYCRC FLAG BODYLEN (batch records, §5.3)
_BATCH_HEAD = struct.Struct(">iiiii")


class CodecError(ValueError):
    """A body does not follow its layout."""


# -- properties (§6.1) ------------------------------------------------------------------------------
def encode_properties(properties: Mapping[str, str]) -> str:
    """``k\\x01v\\x02`` for each pair, with the trailing separator the client always writes."""
    return "".join(f"{k}{NAME_VALUE_SEPARATOR}{v}{PROPERTY_SEPARATOR}" for k, v in properties.items())


def decode_properties(text: str) -> dict[str, str]:
    """Pairs split on \\x02 then \\x01; as the C++ decoder, keep only pieces with exactly two parts."""
    out: dict[str, str] = {}
    for piece in text.split(PROPERTY_SEPARATOR):
        parts = piece.split(NAME_VALUE_SEPARATOR)
        if len(parts) == 2:
            out[parts[0]] = parts[1]
    return out


def body_crc(body: bytes) -> int:
    """BODYCRC as RocketMQ's UtilAll.crc32: CRC-32 masked to a non-negative int32."""
    return zlib.crc32(body) & 0x7FFFFFFF


def inflate_body(body: bytes, max_bytes: int) -> bytes:
    """Inflate a zlib body (sysFlag bit 0); CodecError if it is not zlib or inflates past ``max_bytes``."""
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(body, max_bytes + 1)
    except zlib.error as exc:
        raise CodecError(f"compressed body is not a zlib stream: {exc}") from None
    if len(out) > max_bytes or inflater.unconsumed_tail:
        raise CodecError(f"compressed body inflates past {max_bytes} bytes")
    if not inflater.eof:
        raise CodecError("compressed body is a truncated zlib stream")
    return out


# -- stored-message records (§6.2) ------------------------------------------------------------------
def record_properties(msg: StoredMessage) -> dict[str, str]:
    """A stored message's properties as the client expects them: TAGS and KEYS back among the rest."""
    props: dict[str, str] = {}
    if msg.tags:
        props[PROPERTY_TAGS] = msg.tags
    if msg.keys:
        props[PROPERTY_KEYS] = msg.keys
    props.update(msg.properties)
    return props


def encode_stored_record(
    msg: StoredMessage, store_host: bytes, born_host: bytes | None = None, flag: int = 0, sys_flag: int = 0
) -> bytes:
    """One V1 record for ``msg``. ``store_host`` is the broker's reachable IPv4 address + port (8 bytes, the
    client sends CONSUMER_SEND_MSG_BACK there); ``born_host`` defaults to it."""
    if sys_flag & (SYSFLAG_BORNHOST_V6 | SYSFLAG_STOREHOST_V6):
        raise CodecError("IPv6 host flags cannot be encoded for this client (V1 / IPv4 layout only)")
    topic = msg.topic.encode("utf-8")
    props = encode_properties(record_properties(msg)).encode("utf-8")
    if len(topic) > MAX_TOPIC_BYTES:
        raise CodecError(f"topic is {len(topic)} bytes, a record allows {MAX_TOPIC_BYTES}")
    if len(props) > MAX_PROPERTIES_BYTES:
        raise CodecError(f"properties are {len(props)} bytes, a record allows {MAX_PROPERTIES_BYTES}")
    body = msg.body
    total = RECORD_FIXED_BYTES + len(body) + len(topic) + len(props)
    head = _RECORD_HEAD.pack(
        total, MESSAGE_MAGIC_V1, body_crc(body), msg.queue_id, flag, msg.queue_offset, msg.commit_log_offset,
        sys_flag, msg.born_timestamp, born_host or store_host, msg.store_timestamp, store_host,
        msg.reconsume_times, 0, len(body),
    )
    return b"".join((head, body, _TOPIC_LEN.pack(len(topic)), topic, _PROPS_LEN.pack(len(props)), props))


@dataclass(frozen=True)
class DecodedRecord:
    """One record of a PULL_MESSAGE body, field by field (what the client's MessageExt holds)."""

    store_size: int
    magic: int
    body_crc: int
    queue_id: int
    flag: int
    queue_offset: int
    commit_log_offset: int
    sys_flag: int
    born_timestamp: int
    born_host: bytes
    store_timestamp: int
    store_host: bytes
    reconsume_times: int
    prepared_transaction_offset: int
    body: bytes
    topic: str
    properties: dict[str, str] = field(default_factory=dict)

    @property
    def tags(self) -> str | None:
        return self.properties.get(PROPERTY_TAGS)

    @property
    def keys(self) -> str | None:
        return self.properties.get(PROPERTY_KEYS)

    @property
    def offset_msg_id(self) -> str:
        """The id the client computes from STOREHOST and PHYSICALOFFSET (§6.4)."""
        return offset_msg_id(self.store_host, self.commit_log_offset)

    @property
    def msg_id(self) -> str:
        """What the client shows as the message id: UNIQ_KEY if present, else the offset message id."""
        return self.properties.get(UNIQ_KEY) or self.offset_msg_id


def decode_records(data: bytes) -> list[DecodedRecord]:
    """Walk a PULL_MESSAGE body as the client does (field by field); CodecError if a record is cut short
    or its TOTALSIZE disagrees with its fields."""
    out: list[DecodedRecord] = []
    pos, end = 0, len(data)
    while pos < end:
        if end - pos < _RECORD_HEAD.size:
            raise CodecError(f"record at byte {pos} is cut short in its fixed fields")
        (total, magic, crc, queue_id, flag, queue_offset, phy, sys_flag, born_ts, born_host, store_ts,
         store_host, reconsume, prepared, body_len) = _RECORD_HEAD.unpack_from(data, pos)
        p = pos + _RECORD_HEAD.size
        if body_len < 0 or p + body_len + 1 > end:
            raise CodecError(f"record at byte {pos}: body length {body_len} runs past the buffer")
        body = data[p:p + body_len]
        p += body_len
        (topic_len,) = _TOPIC_LEN.unpack_from(data, p)
        p += 1
        if topic_len > MAX_TOPIC_BYTES or p + topic_len + 2 > end:
            raise CodecError(f"record at byte {pos}: topic length {topic_len} runs past the buffer")
        topic = data[p:p + topic_len]
        p += topic_len
        (props_len,) = _PROPS_LEN.unpack_from(data, p)
        p += 2
        if props_len < 0 or p + props_len > end:
            raise CodecError(f"record at byte {pos}: properties length {props_len} runs past the buffer")
        props = data[p:p + props_len]
        p += props_len
        if total != p - pos:
            raise CodecError(f"record at byte {pos}: TOTALSIZE {total} but its fields take {p - pos} bytes")
        try:
            topic_text, props_text = topic.decode("utf-8"), props.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CodecError(f"record at byte {pos}: topic or properties not UTF-8: {exc}") from None
        out.append(DecodedRecord(
            total, magic, crc, queue_id, flag, queue_offset, phy, sys_flag, born_ts, born_host, store_ts,
            store_host, reconsume, prepared, bytes(body), topic_text, decode_properties(props_text),
        ))
        pos = p
    return out


# -- batch bodies (§5.3) ----------------------------------------------------------------------------
@dataclass(frozen=True)
class BatchEntry:
    """One message of a batch send: user flag, body, its own properties (UNIQ_KEY, TAGS, KEYS...)."""

    body: bytes
    properties: dict[str, str] = field(default_factory=dict)
    flag: int = 0


def encode_batch_body(entries: list[BatchEntry]) -> bytes:
    """The body a client sends for a batch (MAGICCODE and BODYCRC are 0, as the C++ client writes)."""
    parts = []
    for entry in entries:
        props = encode_properties(entry.properties).encode("utf-8")
        if len(props) > MAX_PROPERTIES_BYTES:
            raise CodecError(f"properties are {len(props)} bytes, a batch record allows {MAX_PROPERTIES_BYTES}")
        total = _BATCH_HEAD.size + len(entry.body) + _PROPS_LEN.size + len(props)
        parts += [_BATCH_HEAD.pack(total, 0, 0, entry.flag, len(entry.body)), entry.body,
                  _PROPS_LEN.pack(len(props)), props]
    return b"".join(parts)


def decode_batch_body(data: bytes) -> list[BatchEntry]:
    """Split a batch body into its messages; CodecError on any length that does not add up."""
    out: list[BatchEntry] = []
    pos, end = 0, len(data)
    while pos < end:
        if end - pos < _BATCH_HEAD.size:
            raise CodecError(f"batch record at byte {pos} is cut short in its fixed fields")
        total, _magic, _crc, flag, body_len = _BATCH_HEAD.unpack_from(data, pos)
        p = pos + _BATCH_HEAD.size
        if body_len < 0 or p + body_len + _PROPS_LEN.size > end:
            raise CodecError(f"batch record at byte {pos}: body length {body_len} runs past the buffer")
        body = data[p:p + body_len]
        p += body_len
        (props_len,) = _PROPS_LEN.unpack_from(data, p)
        p += _PROPS_LEN.size
        if props_len < 0 or p + props_len > end:
            raise CodecError(f"batch record at byte {pos}: properties length {props_len} runs past the buffer")
        try:
            props = decode_properties(data[p:p + props_len].decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise CodecError(f"batch record at byte {pos}: properties not UTF-8: {exc}") from None
        p += props_len
        if total != p - pos:
            raise CodecError(f"batch record at byte {pos}: TOTALSIZE {total} but its fields take {p - pos} bytes")
        out.append(BatchEntry(bytes(body), props, flag))
        pos = p
    return out
