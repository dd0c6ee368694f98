"""Pulsar frames: sizes, the BaseCommand, and the checksummed metadata-and-payload of SEND and MESSAGE.

A simple frame is ``[totalSize u32][cmdSize u32][BaseCommand]``; SEND and MESSAGE go on with the *entry*:
``[magic u16 0x0e01][CRC-32C u32][metadataSize u32][MessageMetadata][payload]`` (the magic and checksum only from
protocol version 6 on). The CRC covers metadataSize, metadata and payload (pulsar-binary §2, §3). The broker
stores the entry as it came (adding magic and CRC to a SEND without them) and forwards it verbatim in MESSAGE, so
the client's checksum and its batch detection (the presence of ``num_messages_in_batch``) stay right.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from reference.net.pulsar.schema import pb
from reference.rules.errors import InvalidRequest

MAGIC_CRC32C = 0x0E01
#: The largest message a client may send (CONNECTED.max_message_size; the Java default 5 MiB)...
MAX_MESSAGE_SIZE = 5 * 1024 * 1024
#: ...and the largest frame read: that plus the Java broker's 10 KiB of padding for the command and metadata.
MAX_FRAME_BYTES = MAX_MESSAGE_SIZE + 10 * 1024
#: The protocol version from which SEND carries magic and checksum.
CHECKSUM_VERSION = 6


def _crc_table() -> tuple[int, ...]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return tuple(table)


_TABLE = _crc_table()


def crc32c(data: bytes, crc: int = 0) -> int:
    """CRC-32C (Castagnoli; reflected 0x82F63B78, init and final XOR 0xFFFFFFFF): ``crc32c(b"123456789") ==
    0xE3069283``. ``crc`` continues an earlier result, as the client chains metadata and payload."""
    c = crc ^ 0xFFFFFFFF
    table = _TABLE
    for byte in data:
        c = table[(c ^ byte) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


class FrameError(Exception):
    """Framing that cannot be read (sizes that do not add up, a command that does not parse): the connection
    cannot go on, since the next frame's start is unknown."""


@dataclass(frozen=True)
class Entry:
    """One stored entry: the bytes after a SEND command, always in the checksummed form, and what the broker
    reads of its metadata."""

    raw: bytes
    metadata: Any
    #: Messages in the entry: ``num_messages_in_batch`` if present (a batch, even of 1), else 1.
    size: int
    batched: bool


def encode(command: Any, entry: bytes = b"") -> bytes:
    """A frame: the BaseCommand, then (MESSAGE) the entry's bytes."""
    cmd = command.SerializeToString()
    return struct.pack(">II", 4 + len(cmd) + len(entry), len(cmd)) + cmd + entry


def decode(frame: bytes) -> tuple[Any, bytes]:
    """``frame`` is everything after totalSize: (BaseCommand, the bytes after it). FrameError if unreadable."""
    if len(frame) < 4:
        raise FrameError(f"frame of {len(frame)} bytes has no command size")
    (cmd_size,) = struct.unpack_from(">I", frame)
    if cmd_size > len(frame) - 4:
        raise FrameError(f"command size {cmd_size} exceeds the frame ({len(frame)} bytes)")
    command = pb.BaseCommand()
    try:
        command.ParseFromString(frame[4:4 + cmd_size])
    except Exception as exc:  # noqa: BLE001 - protobuf raises DecodeError or, for a missing required field, others
        raise FrameError(f"BaseCommand does not parse: {exc}") from None
    return command, frame[4 + cmd_size:]


def read_entry(after_command: bytes) -> Entry:
    """The entry of a SEND (InvalidRequest naming the part and the rule: a wrong checksum is ``checksum``)."""
    data = after_command
    if len(data) >= 6 and struct.unpack_from(">H", data)[0] == MAGIC_CRC32C:
        (claimed,) = struct.unpack_from(">I", data, 2)
        body = data[6:]
        if crc32c(body) != claimed:
            raise InvalidRequest("checksum", "CRC-32C of metadataSize, metadata and payload does not match",
                                 "ChecksumError")
    else:
        body = data
    if len(body) < 4:
        raise InvalidRequest("metadataSize", "a SEND carries metadataSize and MessageMetadata after the command")
    (size,) = struct.unpack_from(">I", body)
    if size > len(body) - 4:
        raise InvalidRequest("metadataSize", f"{size} exceeds the {len(body) - 4} bytes after it")
    metadata = pb.MessageMetadata()
    try:
        metadata.ParseFromString(body[4:4 + size])
    except Exception as exc:  # noqa: BLE001 - see decode
        raise InvalidRequest("metadata", f"MessageMetadata does not parse: {exc}") from None
    batched = metadata.HasField("num_messages_in_batch")
    count = metadata.num_messages_in_batch if batched else 1
    if count < 1:
        raise InvalidRequest("num_messages_in_batch", f"must be at least 1, got {count}")
    raw = struct.pack(">HI", MAGIC_CRC32C, crc32c(body)) + body
    return Entry(raw, metadata, count, batched)


def payload_of(raw: bytes) -> tuple[Any, bytes]:
    """(MessageMetadata, payload) of a stored entry (the checksummed form)."""
    (size,) = struct.unpack_from(">I", raw, 6)
    metadata = pb.MessageMetadata()
    metadata.ParseFromString(raw[10:10 + size])
    return metadata, raw[10 + size:]


def split_batch_payload(payload: bytes, count: int) -> list[tuple[Any, bytes]]:
    """A batch payload's messages: ``count`` times ``[u32 size][SingleMessageMetadata][payload_size bytes]``."""
    out, at = [], 0
    for _ in range(count):
        (size,) = struct.unpack_from(">I", payload, at)
        single = pb.SingleMessageMetadata()
        single.ParseFromString(payload[at + 4:at + 4 + size])
        at += 4 + size
        out.append((single, payload[at:at + single.payload_size]))
        at += single.payload_size
    return out
