"""Framing of remoting commands on a TCP stream (protocols/rocketmq-remoting.md §1).

``length(4) | serializeType(1) headerLength(3) | header | body``, all big-endian, where ``length`` counts
everything after itself. This server always writes serialize type 0 (JSON): the C++ client does not mask
the type byte off the header-length word, so any other type breaks it (§1). It accepts only type 0 too.

A stream that breaks the layout cannot be resynchronised (there is no frame marker), so
:class:`FrameDecoder` refuses it with :class:`FrameError` and the connection is closed, as RocketMQ's
NettyDecoder does. Frames announcing more than :data:`MAX_FRAME_BYTES` are refused on their first four
bytes, before anything is buffered.
"""

from __future__ import annotations

import json
import struct

from reference.net.remoting.command import RemotingCommand

#: Largest frame accepted (the length field's value): RocketMQ's default
#: ``com.rocketmq.remoting.frameMaxLength`` = 16 MiB (16777216).
MAX_FRAME_BYTES = 16 * 1024 * 1024
#: Serialize type in the header-length word's top byte: 0 = JSON (1 = RocketMQ binary, not served).
SERIALIZE_JSON = 0

_U32 = struct.Struct(">I")
_HEAD = struct.Struct(">II")


class FrameError(ValueError):
    """The byte stream is not a valid frame sequence. ``commands`` holds the frames decoded before the
    bad one in the same :meth:`FrameDecoder.feed` call, so a server can still answer them."""

    def __init__(self, reason: str, commands: list[RemotingCommand] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.commands = commands or []


def encode_frame(cmd: RemotingCommand) -> bytes:
    """The frame for ``cmd``: JSON header, serialize type 0."""
    header = cmd.header_json()
    return _HEAD.pack(4 + len(header) + len(cmd.body), (SERIALIZE_JSON << 24) | len(header)) + header + cmd.body


def decode_frame_payload(payload: bytes) -> RemotingCommand:
    """Decode what follows the length field of one frame; FrameError on any defect."""
    if len(payload) < 4:
        raise FrameError(f"frame length {len(payload)} is shorter than the 4-byte header-length word")
    (word,) = _U32.unpack_from(payload)
    serialize_type, header_len = word >> 24, word & 0xFFFFFF
    if serialize_type != SERIALIZE_JSON:
        raise FrameError(f"serialize type {serialize_type} is not supported (only 0 = JSON)")
    if header_len > len(payload) - 4:
        raise FrameError(f"header length {header_len} exceeds the frame ({len(payload) - 4} bytes after it)")
    raw = payload[4:4 + header_len]
    try:
        header = json.loads(raw.decode("utf-8"))
        return RemotingCommand.from_header(header, bytes(payload[4 + header_len:]))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise FrameError(f"bad JSON header: {exc}") from None


class FrameDecoder:
    """Incremental decoder: feed it bytes as they arrive, get back the complete commands.

    After a :class:`FrameError` the decoder is unusable (the stream has lost its frame boundaries).
    """

    def __init__(self, max_frame_bytes: int = MAX_FRAME_BYTES) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._buf = bytearray()
        self._broken: str | None = None

    @property
    def buffered(self) -> int:
        """Bytes received but not yet part of a complete frame."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[RemotingCommand]:
        if self._broken is not None:
            raise FrameError(f"decoder already failed: {self._broken}")
        self._buf += data
        out: list[RemotingCommand] = []
        while len(self._buf) >= 4:
            (length,) = _U32.unpack_from(self._buf)
            if length > self.max_frame_bytes:
                self._fail(f"frame length {length} exceeds the maximum {self.max_frame_bytes}", out)
            if length < 4:
                self._fail(f"frame length {length} is shorter than the 4-byte header-length word", out)
            if len(self._buf) < 4 + length:
                break
            payload = bytes(self._buf[4:4 + length])
            del self._buf[:4 + length]
            try:
                out.append(decode_frame_payload(payload))
            except FrameError as exc:
                self._fail(exc.reason, out)
        return out

    def _fail(self, reason: str, decoded: list[RemotingCommand]) -> None:
        self._broken = reason
        self._buf.clear()
        raise FrameError(reason, decoded)
