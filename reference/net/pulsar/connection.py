"""One client connection of the Pulsar front: frames in, handlers called, frames out.

The first command must be CONNECT (anything else closes the connection, as the Java broker does). Framing that
cannot be read (a size out of bounds, a BaseCommand that does not parse) closes the connection, since the next
frame's start is unknown; a command that parses but breaks a rule is refused by :mod:`.errors` and the connection
serves on. Producer and consumer ids are scoped by connection (pulsar-binary §7); when the connection ends its
consumers are closed, so that what they did not acknowledge goes back for redelivery.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
from collections.abc import Callable
from typing import Any

from reference.net.pulsar import consume, frame, produce, session
from reference.net.pulsar.context import ConnectionContext, ConsumerRef, FrontContext
from reference.net.pulsar.errors import error_command
from reference.net.pulsar.schema import COMMAND_FIELDS, pb
from reference.rules.errors import InvalidRequest

log = logging.getLogger("mqtck.pulsar")

#: Each command's handler; a payload handler gets the bytes after the command too.
HANDLERS: dict[int, Callable[[ConnectionContext, Any], None]] = {
    **session.HANDLERS, **produce.HANDLERS, **consume.HANDLERS}
PAYLOAD_HANDLERS: dict[int, Callable[[ConnectionContext, Any, bytes], None]] = dict(produce.PAYLOAD_HANDLERS)
#: BaseCommand type -> the name of the field holding its sub-message.
FIELD_OF = {number: name for number, name, _ in COMMAND_FIELDS}


class PulsarConnection:
    def __init__(self, front: FrontContext, name: str, writer: asyncio.StreamWriter) -> None:
        self.front = front
        self.name = name
        self.writer = writer
        self.protocol_version = 0
        self.connected = False
        self.producers: dict[int, tuple[str, str]] = {}
        self.consumers: dict[int, ConsumerRef] = {}
        self.closed = False

    # -- writing -------------------------------------------------------------------------------
    def write(self, command: object, entry: bytes = b"") -> None:
        if not self.closed:
            self.writer.write(frame.encode(command, entry))

    def success(self, request_id: int) -> None:
        out = pb.BaseCommand(type=pb.Type_.SUCCESS)
        out.success.request_id = request_id
        self.write(out)

    # -- state ---------------------------------------------------------------------------------
    def consumer(self, consumer_id: int) -> ConsumerRef:
        ref = self.consumers.get(consumer_id)
        if ref is None:
            raise InvalidRequest("consumer_id", f"{consumer_id} is not a consumer of this connection",
                                 "CONSUMER_NOT_FOUND")
        return ref

    def close_consumer(self, consumer_id: int) -> None:
        ref = self.consumers.pop(consumer_id, None)
        broker = self.front.running()
        if ref is not None and broker is not None:
            with contextlib.suppress(InvalidRequest):  # already gone (a broker restart dropped it)
                broker.close_permit_consumer(ref.group, ref.client_id, ref.topic)

    def abort(self) -> None:
        """Close from the broker's side: nothing more is written, and the read loop ends, closing the consumers."""
        if not self.closed:
            self.closed = True
            self.writer.close()

    # -- serving -------------------------------------------------------------------------------
    async def serve(self, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                head = await reader.readexactly(4)
                (total,) = struct.unpack(">I", head)
                if not 4 <= total <= frame.MAX_FRAME_BYTES:
                    raise frame.FrameError(f"frame size {total} outside [4, {frame.MAX_FRAME_BYTES}]")
                command, after = frame.decode(await reader.readexactly(total))
                self.handle(command, after)
                await self.writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except frame.FrameError as exc:
            log.warning("%s: closing the connection: %s", self.name, exc)
        finally:
            self.closed = True
            for consumer_id in list(self.consumers):
                self.close_consumer(consumer_id)
            self.writer.close()

    def handle(self, command: object, after: bytes) -> None:
        kind = command.type  # type: ignore[attr-defined]
        if not self.connected and kind != pb.Type_.CONNECT:
            raise frame.FrameError(f"the first command must be CONNECT, got type {kind}")
        field = FIELD_OF.get(kind)
        sub = getattr(command, field) if field is not None and command.HasField(field) else None  # type: ignore[attr-defined]
        if sub is None:
            raise frame.FrameError(f"BaseCommand of type {kind} without its {field or 'known'} sub-message")
        request_id = sub.request_id if "request_id" in type(sub).DESCRIPTOR.fields_by_name and sub.HasField(
            "request_id") else None
        try:
            missing = sub.FindInitializationErrors()
            if missing:
                raise InvalidRequest(missing[0], "is a required field of this command")
            if kind in PAYLOAD_HANDLERS:
                PAYLOAD_HANDLERS[kind](self, command, after)
            elif kind in HANDLERS:
                HANDLERS[kind](self, command)
            else:
                raise InvalidRequest(field or "type", "not served by the mqtck reference front (docs/pulsar.md)")
        except InvalidRequest as exc:
            if request_id is not None:
                self.write(error_command(request_id, exc))
            else:  # FLOW, ACK, REDELIVER have no error reply: the Java broker logs and ignores them
                log.info("%s: ignored %s: %s", self.name, field, exc)
        except Exception as exc:  # noqa: BLE001 - a fault of this front must not end the other connections
            log.exception("%s: %s failed", self.name, field)
            if request_id is not None:
                self.write(error_command(request_id, InvalidRequest(field or "type", f"not handled: {exc}",
                                                                    "UnknownError")))
