"""JSON Lines over stdin/stdout: the simplest transport (in the manner of Maelstrom's nodes).

One request object per input line, one response object per output line, correlated by ``id``:

* ``{"id": 1, "op": "createTopic", "topic": "T", "queues": 4}``
* ``{"id": 2, "op": "send", "topic": "T", "queueId": 0, "body": "<base64>", "tags": "A"}``
  → ``{"id": 2, "ok": true, "queueOffset": 0, "msgId": "…"}``, written only after the store
  accepted the message: an acknowledged send is durable against a crash of this process.
* ``{"id": 3, "op": "pull", "group": "G", "topic": "T", "queueId": 0, "offset": 0, "maxNums": 32,
  "expression": "*", "suspendMs": 0}`` → status, nextBeginOffset, min/max and messages (bodies
  base64). A held pull is answered when the hold service wakes it, possibly after later requests.
* ``{"id": 4, "op": "queryOffset"|"commitOffset"|"minMax", …}``

A line that is not a JSON object, or names an unknown op, or breaks a field rule, gets
``{"id": …, "ok": false, "error": {"code", "field", "rule"}}`` and the server keeps serving.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import sys
from collections.abc import Callable
from typing import Any

from reference.broker.broker import Broker
from reference.broker.host import BrokerHost
from reference.broker.protocol import PullMessageRequest, PullResponse, PullSysFlag
from reference.rules.errors import InvalidRequest
from reference.store.message import Message


def _field(obj: dict[str, Any], name: str, kind: type, default: Any = ...) -> Any:
    if name not in obj:
        if default is ...:
            raise InvalidRequest(name, "is required")
        return default
    value = obj[name]
    if kind is int and (not isinstance(value, int) or isinstance(value, bool)):
        raise InvalidRequest(name, "must be an integer")
    if kind is str and not isinstance(value, str):
        raise InvalidRequest(name, "must be a string")
    return value


def encode_pull(response: PullResponse) -> dict[str, Any]:
    return {
        "ok": True,
        "code": response.code.name,
        "status": response.status.name if response.status else None,
        "nextBeginOffset": response.next_begin_offset,
        "minOffset": response.min_offset,
        "maxOffset": response.max_offset,
        "heldMs": response.held_ms,
        "messages": [
            {
                "queueOffset": m.queue_offset,
                "msgId": m.unique_id,
                "tags": m.tags,
                "body": base64.b64encode(m.body).decode("ascii"),
            }
            for m in response.messages
        ],
    }


class StdioChannel:
    """The single client on stdin/stdout."""

    def __init__(self, write: Callable[[dict[str, Any]], None]) -> None:
        self.key = "stdio"
        self._write = write
        self.pending: dict[int, Any] = {}

    def deliver_pull(self, request: PullMessageRequest, response: PullResponse) -> None:
        self._write({"id": self.pending.pop(id(request), None), **encode_pull(response)})

    def notify_consumer_ids_changed(self, group: str) -> None:
        self._write({"event": "NOTIFY_CONSUMER_IDS_CHANGED", "group": group})


class StdioServer:
    def __init__(self, broker: Broker, out: Callable[[str], None]) -> None:
        self.broker = broker
        self._out = out
        self.channel = StdioChannel(self.write)

    def write(self, obj: dict[str, Any]) -> None:
        self._out(json.dumps(obj, separators=(",", ":")) + "\n")

    def handle_line(self, line: str) -> None:
        rid: Any = None
        try:
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidRequest("line", f"not JSON: {exc.msg}", "MALFORMED") from None
            if not isinstance(obj, dict):
                raise InvalidRequest("line", "must be a JSON object", "MALFORMED")
            rid = obj.get("id")
            reply = self._dispatch(_field(obj, "op", str), obj, rid)
            if reply is not None:
                self.write({"id": rid, **reply})
        except InvalidRequest as exc:
            self.write({"id": rid, "ok": False, "error": exc.as_dict()})

    def _dispatch(self, op: str, o: dict[str, Any], rid: Any) -> dict[str, Any] | None:
        b = self.broker
        if op == "createTopic":
            b.create_topic(_field(o, "topic", str), _field(o, "queues", int))
            return {"ok": True}
        if op == "send":
            try:
                body = base64.b64decode(_field(o, "body", str), validate=True)
            except (binascii.Error, ValueError):
                raise InvalidRequest("body", "must be base64") from None
            r = b.send(Message(_field(o, "topic", str), body, _field(o, "queueId", int), tags=o.get("tags")))
            return {"ok": True, "queueOffset": r.queue_offset, "msgId": r.unique_id}
        if op == "pull":
            suspend = _field(o, "suspendMs", int, 0)
            flag = PullSysFlag.SUBSCRIPTION | (PullSysFlag.SUSPEND if suspend > 0 else 0)
            request = PullMessageRequest(
                _field(o, "group", str), _field(o, "topic", str), _field(o, "queueId", int),
                _field(o, "offset", int), _field(o, "maxNums", int, 32), int(flag),
                suspend_timeout_ms=suspend, subscription=_field(o, "expression", str, "*"),
            )
            self.channel.pending[id(request)] = rid
            response = b.pull(request, self.channel)
            if response is None:
                return None
            self.channel.pending.pop(id(request), None)
            return encode_pull(response)
        if op == "queryOffset":
            q = b.query_consumer_offset(_field(o, "group", str), _field(o, "topic", str), _field(o, "queueId", int))
            return {"ok": True, "code": q.code.name, "offset": q.offset}
        if op == "commitOffset":
            b.update_consumer_offset(
                _field(o, "group", str), _field(o, "topic", str), _field(o, "queueId", int), _field(o, "offset", int)
            )
            return {"ok": True}
        if op == "minMax":
            topic, qid = _field(o, "topic", str), _field(o, "queueId", int)
            b.store.queue_nums(topic)
            return {
                "ok": True,
                "minOffset": b.store.get_min_offset_in_queue(topic, qid),
                "maxOffset": b.store.get_max_offset_in_queue(topic, qid),
            }
        raise InvalidRequest("op", f"unknown op {op!r}", "REQUEST_CODE_NOT_SUPPORTED")


async def serve_stdio(host: BrokerHost) -> None:
    """Serve stdin/stdout until stdin closes; the host's broker is opened and closed here."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)

    def out(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    server = StdioServer(host.open(), out)
    server.write({"event": "READY"})
    try:
        while line := await reader.readline():
            if line.strip():
                server.handle_line(line.decode("utf-8", errors="replace"))
    finally:
        host.close()
