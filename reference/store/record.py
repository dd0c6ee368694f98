"""The commit-log record: our own self-describing byte layout (big-endian).

=======  ======  ===================================================================
offset   type    field
=======  ======  ===================================================================
0        int32   total_size: the whole record, header included
4        uint32  magic: :data:`MESSAGE_MAGIC` (or :data:`BLANK_MAGIC` for an end-of-segment marker)
8        uint32  crc: CRC-32 of bytes [12, total_size)
12       int32   queue_id
16       int64   queue_offset
24       int64   commit_log_offset (where this record starts; lets recovery spot stale bytes)
32       int64   store_timestamp (ms)
40       int64   born_timestamp (ms)
48       int32   reconsume_times
52       int64   tags_code (Java hashCode of the tag, 0 when untagged)
60       8 bytes store_host (IPv4 + int32 port)
68       uint16  topic length, then uint16 tags length, uint16 keys length,
74       uint32  properties length, uint32 body length
82               topic, tags, keys, properties, body (UTF-8 text; properties as
                 ``name\\x01value\\x02`` pairs, RocketMQ's encoding)
=======  ======  ===================================================================

Why a CRC and a magic: after a crash the last record may be half written. Recovery walks records
from the start and stops at the first whose magic, length or CRC is wrong; everything before it is
intact, everything after is discarded. The prefix (length, magic, CRC) is written last, so an
interrupted append leaves zeros where recovery looks first.

A record never spans segments. When the next record does not fit, the rest of the segment becomes a
blank marker (length = bytes left, :data:`BLANK_MAGIC`) and the record goes to the next segment, as
RocketMQ's BLANK_MAGIC_CODE does; a record fits only if :data:`END_MARKER_BYTES` stay free after it,
so there is always room for the marker.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping
from mmap import mmap
from pathlib import Path
from types import MappingProxyType
from typing import NamedTuple

from reference.store.mapped_file import NAME_DIGITS
from reference.store.message import UNIQ_KEY, StoredMessage, offset_msg_id

MESSAGE_MAGIC = 0x6D71746B  # "mqtk"
BLANK_MAGIC = 0x626C6E6B  # "blnk"

PREFIX = struct.Struct(">iII")
TAIL = struct.Struct(">iqqqqiq8sHHHII")
HEADER = struct.Struct(">iIIiqqqqiq8sHHHII")
HEADER_BYTES = HEADER.size
#: Bytes that must stay free after a record for the end-of-segment marker.
END_MARKER_BYTES = PREFIX.size

_NAME_VALUE = "\x01"
_PROPERTY = "\x02"
_NO_PROPERTIES: Mapping[str, str] = MappingProxyType({})

#: Largest encoded tags / keys / topic (their length fields are uint16).
MAX_SHORT_FIELD_BYTES = 0xFFFF


def encode_properties(properties: Mapping[str, str]) -> bytes:
    return "".join(f"{k}{_NAME_VALUE}{v}{_PROPERTY}" for k, v in properties.items()).encode()


def property_rule_broken(name: object, value: object) -> str | None:
    """Why (name, value) cannot be stored as a property (None if it can)."""
    if not isinstance(name, str) or not isinstance(value, str) or not name:
        return "names must be non-empty strings and values strings"
    if any(sep in name or sep in value for sep in (_NAME_VALUE, _PROPERTY)):
        return "names and values may not contain the characters \\x01 or \\x02"
    return None


def decode_properties(raw: bytes) -> Mapping[str, str]:
    if not raw:
        return _NO_PROPERTIES
    out = {}
    for pair in raw.decode().split(_PROPERTY):
        if pair:
            name, _, value = pair.partition(_NAME_VALUE)
            out[name] = value
    return out


def record_size(topic: bytes, tags: bytes, keys: bytes, props: bytes, body: bytes) -> int:
    return HEADER_BYTES + len(topic) + len(tags) + len(keys) + len(props) + len(body)


class RecordHeader(NamedTuple):
    """The fixed part of a record, as recovery reads it."""

    total_size: int
    magic: int
    crc: int
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    store_timestamp: int
    born_timestamp: int
    reconsume_times: int
    tags_code: int
    store_host: bytes
    topic_len: int
    tags_len: int
    keys_len: int
    props_len: int
    body_len: int


def write_record(
    buf: mmap,
    pos: int,
    total: int,
    commit_log_offset: int,
    queue_id: int,
    queue_offset: int,
    store_timestamp: int,
    born_timestamp: int,
    reconsume_times: int,
    tags_code: int,
    store_host: bytes,
    topic: bytes,
    tags: bytes,
    keys: bytes,
    props: bytes,
    body: bytes,
) -> None:
    """Write one record of ``total`` bytes at ``pos`` of ``buf`` (an mmap); prefix last."""
    tail_end = pos + HEADER_BYTES
    TAIL.pack_into(
        buf, pos + PREFIX.size, queue_id, queue_offset, commit_log_offset, store_timestamp, born_timestamp,
        reconsume_times, tags_code, store_host, len(topic), len(tags), len(keys), len(props), len(body),
    )
    payload = b"".join((topic, tags, keys, props, body))
    buf[tail_end:tail_end + len(payload)] = payload
    crc = zlib.crc32(payload, zlib.crc32(buf[pos + PREFIX.size:tail_end]))
    PREFIX.pack_into(buf, pos, total, MESSAGE_MAGIC, crc)


def write_blank(buf: mmap, pos: int, length: int) -> None:
    """Mark ``[pos, pos + length)`` as the unused end of a segment."""
    PREFIX.pack_into(buf, pos, length, BLANK_MAGIC, 0)


def check_record(buf: mmap, pos: int, limit: int, expected_offset: int) -> tuple[int, RecordHeader | None]:
    """Recovery's look at ``pos``: ``(length, header)`` for an intact record, ``(length, None)`` for
    an end-of-segment marker, ``(0, None)`` for anything else (torn, zeros, stale bytes). ``limit``
    is the segment size; ``expected_offset`` the commit-log offset a record here must carry."""
    if pos + PREFIX.size > limit:
        return 0, None
    total, magic, crc = PREFIX.unpack_from(buf, pos)
    if magic == BLANK_MAGIC:
        return (total, None) if total == limit - pos else (0, None)
    if magic != MESSAGE_MAGIC or not HEADER_BYTES <= total <= limit - pos - END_MARKER_BYTES:
        return 0, None
    header = RecordHeader._make(HEADER.unpack_from(buf, pos))
    lengths = header.topic_len + header.tags_len + header.keys_len + header.props_len + header.body_len
    if header.commit_log_offset != expected_offset or HEADER_BYTES + lengths != total:
        return 0, None
    if zlib.crc32(buf[pos + PREFIX.size:pos + total]) != crc:
        return 0, None
    return total, header


def header_topic(buf: mmap, pos: int, header: RecordHeader) -> str:
    start = pos + HEADER_BYTES
    return buf[start:start + header.topic_len].decode()


def read_record(buf: mmap, pos: int) -> StoredMessage:
    """Decode the (intact) record at ``pos``."""
    (total, _magic, _crc, queue_id, queue_offset, commit_log_offset, store_ts, born_ts, reconsume,
     _code, host, topic_len, tags_len, keys_len, props_len, body_len) = HEADER.unpack_from(buf, pos)
    a = pos + HEADER_BYTES
    b = a + topic_len
    c = b + tags_len
    d = c + keys_len
    e = d + props_len
    topic = buf[a:b].decode()
    tags = buf[b:c].decode() if tags_len else None
    keys = buf[c:d].decode() if keys_len else None
    properties = decode_properties(buf[d:e]) if props_len else _NO_PROPERTIES
    msg_id = offset_msg_id(host, commit_log_offset)
    return StoredMessage(
        topic, queue_id, queue_offset, commit_log_offset, total, buf[e:e + body_len],
        tags, keys, properties, store_ts, born_ts, reconsume, msg_id, properties.get(UNIQ_KEY) or msg_id,
    )


def store_timestamp_at(buf: mmap, pos: int) -> int:
    return HEADER.unpack_from(buf, pos)[6]


#: What :func:`tear_record` writes over a record's magic: no commit log's magic or blank marker.
TORN_MAGIC = b"\x00\x0b\xad\x00"


def tear_record(commitlog_dir: str | Path, segment_bytes: int, offset: int,
                magics: frozenset[int] = frozenset({MESSAGE_MAGIC})) -> None:
    """Overwrite the magic of the record at commit-log ``offset``, as a torn write leaves it, in a stopped
    broker's files; ValueError if no record with one of ``magics`` starts there.

    RocketMQ's commit log shares the two facts this needs with ours: segment files are named by their first
    offset in 20 digits, and a record starts with its int32 total size and its magic; so a peer's runner
    tears an Apache store with this too, naming RocketMQ's magics. Recovery must cut the log there (STORE-6)."""
    path = Path(commitlog_dir) / f"{offset // segment_bytes * segment_bytes:0{NAME_DIGITS}d}"
    position = offset % segment_bytes
    try:
        with path.open("r+b") as fh:
            fh.seek(position)
            prefix = fh.read(8)
            if len(prefix) < 8:
                raise ValueError(f"commit-log offset {offset}: {path.name} ends before it")
            total, magic = struct.unpack(">iI", prefix)
            if magic not in magics or total <= 8:
                raise ValueError(f"commit-log offset {offset}: no record starts there (size {total}, magic {magic:#x})")
            fh.seek(position + 4)
            fh.write(TORN_MAGIC)
    except FileNotFoundError:
        raise ValueError(f"commit-log offset {offset}: no segment file {path.name}") from None
