"""A minimal asyncio remoting client over the codec, for the server tests (requests matched by opaque;
server-to-client requests such as NOTIFY_CONSUMER_IDS_CHANGED collected in ``notifications``)."""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

from reference.broker.protocol import PullSysFlag
from reference.net.remoting.command import RemotingCommand, RequestCode
from reference.net.remoting.frame import FrameDecoder, encode_frame

TIMEOUT_S = 5.0


class WireClient:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader, self._writer = reader, writer
        self._opaque = itertools.count(0)
        self._waiting: dict[int, asyncio.Future[RemotingCommand]] = {}
        self.notifications: asyncio.Queue[RemotingCommand] = asyncio.Queue()
        self.closed = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def connect(cls, addr: tuple[str, int]) -> WireClient:
        reader, writer = await asyncio.open_connection(*addr)
        return cls(reader, writer)

    async def _read(self) -> None:
        decoder = FrameDecoder()
        try:
            while data := await self._reader.read(65536):
                for cmd in decoder.feed(data):
                    if cmd.is_response:
                        future = self._waiting.pop(cmd.opaque, None)
                        if future is not None and not future.done():
                            future.set_result(cmd)
                    else:
                        self.notifications.put_nowait(cmd)
        except (ConnectionError, OSError):
            pass
        finally:
            self.closed.set()
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(ConnectionError("closed"))

    def start(self, code: int, ext: dict[str, Any] | None = None, body: bytes = b"") -> asyncio.Future:
        """Send a request; the returned future resolves with its response."""
        opaque = next(self._opaque)
        future: asyncio.Future[RemotingCommand] = asyncio.get_running_loop().create_future()
        self._waiting[opaque] = future
        cmd = RemotingCommand(int(code), opaque=opaque, language="CPP", version=63,
                              ext_fields={k: str(v) for k, v in (ext or {}).items()}, body=body)
        self._writer.write(encode_frame(cmd))
        return future

    async def request(self, code: int, ext: dict[str, Any] | None = None, body: bytes = b"",
                      timeout: float = TIMEOUT_S) -> RemotingCommand:
        return await asyncio.wait_for(self.start(code, ext, body), timeout)

    def write_raw(self, data: bytes) -> None:
        self._writer.write(data)

    async def close(self) -> None:
        self._writer.close()
        self._task.cancel()

    # -- shorthands ----------------------------------------------------------------------------
    async def route(self, topic: str) -> RemotingCommand:
        return await self.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})

    async def heartbeat(self, client_id: str, group: str, topics: dict[str, str], model: int = 1) -> RemotingCommand:
        subs = [{"topic": t, "subString": e, "subVersion": "1"} for t, e in topics.items()]
        body = {"clientID": client_id, "consumerDataSet": [
            {"groupName": group, "consumeType": 1, "messageModel": model, "consumeFromWhere": 0,
             "subscriptionDataSet": subs}]}
        return await self.request(RequestCode.HEART_BEAT, body=json.dumps(body).encode() + b"\n")

    async def send(self, topic: str, queue_id: int, body: bytes, properties: str = "", **ext: Any) -> RemotingCommand:
        fields = {"producerGroup": "PG", "topic": topic, "queueId": queue_id, "sysFlag": 0,
                  "bornTimestamp": "1", "flag": 0, "properties": properties, "reconsumeTimes": "0",
                  "unitMode": "0", "batch": "0", **ext}
        return await self.request(RequestCode.SEND_MESSAGE, fields, body)

    def pull(self, group: str, topic: str, queue_id: int, offset: int,
             sys_flag: int = PullSysFlag.SUSPEND | PullSysFlag.SUBSCRIPTION, commit: int = 0,
             suspend_ms: int = 15_000, max_nums: int = 32, subscription: str = "*") -> asyncio.Future:
        return self.start(RequestCode.PULL_MESSAGE, {
            "consumerGroup": group, "topic": topic, "queueId": queue_id, "queueOffset": offset,
            "maxMsgNums": max_nums, "sysFlag": int(sys_flag), "commitOffset": commit,
            "suspendTimeoutMillis": suspend_ms, "subscription": subscription, "subVersion": "1"})
