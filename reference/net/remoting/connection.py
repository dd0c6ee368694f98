"""One accepted TCP connection of the remoting servers: frames in, requests dispatched, frames out.

The connection is also the broker core's :class:`~reference.broker.protocol.Channel` for its client
(RocketMQ keys a group's members by their Netty channel): the core answers a held pull and sends
NOTIFY_CONSUMER_IDS_CHANGED through it, long after the request's handler returned.

Everything runs on the asyncio loop that also runs the broker's timers, so the broker stays
single-threaded. A stream that breaks the framing is logged in one line and closed (nothing can be
answered: the frame boundary, and so the ``opaque``, is lost); a handler that raises gets an error
response; nothing a client sends stops the server.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable
from typing import Any

from reference.broker.pop.protocol import PopMessageRequest, PopResponse
from reference.broker.protocol import PullMessageRequest, PullResponse
from reference.net.remoting.command import ONEWAY_FLAG, RemotingCommand, RequestCode
from reference.net.remoting.frame import MAX_FRAME_BYTES, FrameDecoder, FrameError, encode_frame

log = logging.getLogger("mqtck.remoting")

#: Bytes asked of the socket per read.
READ_CHUNK_BYTES = 64 * 1024

#: (connection, request) -> the response, or None when the answer comes later (a held pull) or never.
Dispatch = Callable[["RemotingConnection", RemotingCommand], RemotingCommand | None]
#: Turns the core's late answer to a held request (a pull, a pop) into the response frame for that request.
Encoder = Callable[[Any], RemotingCommand]

_ids = itertools.count(1)


class RemotingConnection:
    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, dispatch: Dispatch,
        on_close: Callable[[RemotingConnection], None] | None = None, max_frame_bytes: int = MAX_FRAME_BYTES,
        on_late_answer: Callable[[], None] | None = None,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._dispatch = dispatch
        self._on_close = on_close
        #: Told of every late answer written (a held pull or pop answered after its handler returned): a runner
        #: on simulated time stops its clock there, so the instant of the answer is known exactly.
        self._on_late_answer = on_late_answer
        self._decoder = FrameDecoder(max_frame_bytes)
        peer = writer.get_extra_info("peername") or ("?", 0)
        self.peer: tuple[str, int] = (str(peer[0]), int(peer[1]))
        #: Channel key for the broker core: unique per connection, readable in traces.
        self.key = f"{self.peer[0]}:{self.peer[1]}#{next(_ids)}"
        #: The client id its last heartbeat named ("" before any).
        self.client_id = ""
        self._held: dict[int, Encoder] = {}
        self._opaque = itertools.count(1)
        self.closed = False

    # -- the read loop -------------------------------------------------------------------------
    async def serve(self) -> None:
        try:
            while not self.closed:
                data = await self._reader.read(READ_CHUNK_BYTES)
                if not data:
                    break
                try:
                    commands = self._decoder.feed(data)
                except FrameError as exc:
                    for cmd in exc.commands:
                        self._handle(cmd)
                    log.warning("remoting %s: closing the connection: %s", self.key, exc.reason)
                    break
                for cmd in commands:
                    self._handle(cmd)
        except (ConnectionError, OSError):
            pass
        finally:
            self.close()

    def _handle(self, cmd: RemotingCommand) -> None:
        if cmd.is_response:
            return  # a client's answer to one of our oneway notifications: nothing waits for it
        response = self._dispatch(self, cmd)
        if response is not None and not cmd.is_oneway:
            self.send(response)

    # -- writing -------------------------------------------------------------------------------
    def send(self, cmd: RemotingCommand) -> None:
        if self.closed or self._writer.is_closing():
            return
        self._writer.write(encode_frame(cmd))

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._held.clear()
        self._writer.close()
        if self._on_close is not None:
            self._on_close(self)

    # -- the broker core's Channel ------------------------------------------------------------
    def hold(self, request: PullMessageRequest | PopMessageRequest, encode: Encoder) -> None:
        """Remember how to answer ``request`` when the core delivers it (:meth:`deliver_pull`,
        :meth:`deliver_pop`). Registered before the core is called: it may answer during the call."""
        self._held[id(request)] = encode

    def _deliver(self, request: object, response: object) -> None:
        encode = self._held.pop(id(request), None)
        if encode is not None:
            self.send(encode(response))
            if self._on_late_answer is not None:
                self._on_late_answer()

    def deliver_pull(self, request: PullMessageRequest, response: PullResponse) -> None:
        self._deliver(request, response)

    def deliver_pop(self, request: PopMessageRequest, response: PopResponse) -> None:
        self._deliver(request, response)

    def notify_consumer_ids_changed(self, group: str) -> None:
        """NOTIFY_CONSUMER_IDS_CHANGED as a oneway request on the client's own connection (§5.12)."""
        self.send(RemotingCommand(
            int(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED), opaque=next(self._opaque), flag=ONEWAY_FLAG,
            ext_fields={"consumerGroup": group},
        ))
