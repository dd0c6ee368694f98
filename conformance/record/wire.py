"""Remoting frames seen by the recorder, turned into trace schema v1 rows.

The recorder sees both directions of every connection. A request is remembered by its ``opaque`` until its
answer comes back, because most rows need both: a SEND row is written when the broker answered SUCCESS with
the queue offset it stored the message at; a PULL_RESP row carries the request's offset and the answer's
status, next offset and bounds. Rows are the broker's view (source ``broker:<name>``, the name the route
data gives the address), timestamped when the proxy saw the frame.

What maps to the schema:

==============================  ================================================================
SEND_MESSAGE (V2, batch)        SEND per message stored (topic, queue, offset, UNIQ_KEY, tags)
PULL_MESSAGE                    PULL_REQ; PULL_RESP with the GetMessageStatus the code and bounds
                                show (``reference.rules.codes.derive_status``) and
                                ``held_ms``; COMMIT when it carries the commit-offset flag
UPDATE_CONSUMER_OFFSET          COMMIT (oneway: when sent; else when answered SUCCESS)
HEART_BEAT                      SUBSCRIBE per new (group, topic, expression) of the client
UNREGISTER_CLIENT               UNSUBSCRIBE
POP_MESSAGE, ACK_MESSAGE,       POP per message (its handle as the client builds it), ACK,
CHANGE_MESSAGE_INVISIBLETIME    CHANGE_INVISIBLE
==============================  ================================================================

Every other frame is passed on and counted by its code in :attr:`WireRecorder.passed`; a frame that does not
decode (not JSON-serialised, a broken header) is passed on too and counted in :attr:`WireRecorder.malformed`.
Nothing here can fail a connection: a frame that cannot be mapped is a count, never an exception.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from conformance.targets.remoting import code_name, ext_int, pop_handles
from reference.broker.protocol import PullSysFlag
from reference.clock import RealClock
from reference.net.remoting.command import RemotingCommand, RequestCode
from reference.net.remoting.message_codec import PROPERTY_TAGS, decode_batch_body, decode_properties, decode_records
from reference.net.remoting.send_header import send_header
from reference.rules.codes import ResponseCode, derive_status
from reference.store.message import UNIQ_KEY
from reference.trace import Trace

#: RocketMQ's MessageModel names in a heartbeat's consumerDataSet, as the trace writes them (anything else is
#: taken as clustering, RocketMQ's default).
MODELS = ("CLUSTERING", "BROADCASTING")
#: Topics a heartbeat subscribes to that no producer sends to (a group's retry topic): not recorded.
SYSTEM_TOPIC_PREFIX = "%"
POP, ACK, CHANGE = RequestCode.POP_MESSAGE, RequestCode.ACK_MESSAGE, RequestCode.CHANGE_MESSAGE_INVISIBLETIME
SENDS = (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE)
#: Request codes whose frames the recorder maps (the others are passed on and counted).
MAPPED = frozenset({*SENDS, RequestCode.PULL_MESSAGE, RequestCode.UPDATE_CONSUMER_OFFSET, RequestCode.HEART_BEAT,
                    RequestCode.UNREGISTER_CLIENT, POP, ACK, CHANGE})


@dataclass
class Connection:
    """One client connection through the proxy: to the name server (``broker`` None) or to a broker."""

    peer: str
    broker: str | None
    #: The client id its heartbeats gave (until then the peer address stands for it).
    client_id: str | None = None
    pending: dict[int, tuple[RemotingCommand, int]] = field(default_factory=dict)

    @property
    def client(self) -> str:
        return self.client_id or f"unknown@{self.peer}"


def _code_name(code: int) -> str:
    try:
        return RequestCode(code).name
    except ValueError:
        return str(code)


class WireRecorder:
    """Frames in, trace rows out (into ``trace``); one instance per recording, shared by every connection."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        #: When a frame was seen: the trace's clock (wall time, for a recording).
        self.clock = trace.clock or RealClock()
        self.passed: Counter[str] = Counter()
        self.malformed = 0
        self.rows: Counter[str] = Counter()
        #: Per (client, group, topic): the last expression recorded (heartbeats repeat every 30 s).
        self._subscribed: dict[tuple[str, str, str], tuple[str, str]] = {}
        #: handle -> msg_id, so that an ACK or CHANGE_INVISIBLE row names the message (the wire does not).
        self._handles: dict[str, str] = {}

    # -- input ---------------------------------------------------------------------------------
    def from_client(self, conn: Connection, cmd: RemotingCommand | None) -> None:
        """A frame the client sent (None: it did not decode)."""
        if cmd is None:
            self.malformed += 1
            return
        if cmd.is_response or cmd.code not in MAPPED or conn.broker is None:
            self.passed[_code_name(cmd.code) if not cmd.is_response else "response to the server"] += 1
            return
        now = self.clock.now_ms()
        try:
            self._request(conn, cmd, now)
        except (ValueError, KeyError, TypeError):
            self.malformed += 1
            return
        if not cmd.is_oneway:
            conn.pending[cmd.opaque] = (cmd, now)

    def from_server(self, conn: Connection, cmd: RemotingCommand | None) -> None:
        """A frame the server sent back (None: it did not decode)."""
        if cmd is None:
            self.malformed += 1
            return
        request = conn.pending.pop(cmd.opaque, None) if cmd.is_response else None
        if request is None:
            return
        try:
            self._answer(conn, request[0], cmd, request[1], self.clock.now_ms())
        except (ValueError, KeyError, TypeError):
            self.malformed += 1

    # -- mapping -------------------------------------------------------------------------------
    def _row(self, conn: Connection, event: str, ts_ms: int, **columns: Any) -> None:
        self.trace.source(f"broker:{conn.broker}").record(event, ts_ms, **columns)
        self.rows[event] += 1

    def _request(self, conn: Connection, cmd: RemotingCommand, now: int) -> None:
        ext = cmd.ext_fields
        if cmd.code == RequestCode.PULL_MESSAGE:
            flags = ext_int(ext, "sysFlag", 0)
            self._row(conn, "PULL_REQ", now, **self._queue(conn, ext, "queueOffset"),
                      max_nums=ext_int(ext, "maxMsgNums", 32),
                      suspend_ms=ext_int(ext, "suspendTimeoutMillis", 0) if flags & PullSysFlag.SUSPEND else 0)
            if flags & PullSysFlag.COMMIT_OFFSET and ext_int(ext, "commitOffset", -1) >= 0:
                self._row(conn, "COMMIT", now, **self._queue(conn, ext, "commitOffset"))
        elif cmd.code == RequestCode.UPDATE_CONSUMER_OFFSET and cmd.is_oneway:
            self._row(conn, "COMMIT", now, **self._queue(conn, ext, "commitOffset"))
        elif cmd.code == RequestCode.HEART_BEAT:
            self._heartbeat(conn, cmd, now)
        elif cmd.code == RequestCode.UNREGISTER_CLIENT and ext.get("consumerGroup"):
            conn.client_id = ext.get("clientID") or conn.client_id
            self._row(conn, "UNSUBSCRIBE", now, group=ext["consumerGroup"], client_id=conn.client)

    def _answer(self, conn: Connection, req: RemotingCommand, resp: RemotingCommand, sent: int, now: int) -> None:
        ext, got = req.ext_fields, resp.ext_fields
        if req.code in SENDS and resp.code == ResponseCode.SUCCESS:
            self._sends(conn, req, got, now)
        elif req.code == RequestCode.PULL_MESSAGE:
            offset, lo, hi = ext_int(ext, "queueOffset", -1), ext_int(got, "minOffset", 0), ext_int(got, "maxOffset", 0)
            status = derive_status(resp.code, offset, lo, hi) or code_name(resp.code)
            count = count_records(resp.body) if resp.code == ResponseCode.SUCCESS else 0
            self._row(conn, "PULL_RESP", now, **self._queue(conn, ext, "queueOffset"), status=status,
                      next_offset=ext_int(got, "nextBeginOffset", offset), min_offset=lo, max_offset=hi, count=count,
                      held_ms=now - sent)
        elif req.code == RequestCode.UPDATE_CONSUMER_OFFSET and resp.code == ResponseCode.SUCCESS:
            self._row(conn, "COMMIT", now, **self._queue(conn, ext, "commitOffset"))
        elif req.code == POP and resp.code == ResponseCode.SUCCESS:
            self._pops(conn, req, resp, now)
        elif req.code in (ACK, CHANGE):
            handle = ext.get("extraInfo", "")
            msg_id = self._handles.get(handle)
            if msg_id is None:  # popped before the recording began: the row could not name its message
                self.passed[f"{_code_name(req.code)} of a handle popped before the recording"] += 1
                return
            common = {"group": ext.get("consumerGroup"), "client_id": conn.client, "handle": handle, "msg_id": msg_id}
            if req.code == ACK:
                status = "OK" if resp.code == ResponseCode.SUCCESS else code_name(resp.code)
                self._row(conn, "ACK", now, status=status, **common)
            elif resp.code == ResponseCode.SUCCESS:
                self._row(conn, "CHANGE_INVISIBLE", now, invisible_ms=ext_int(ext, "invisibleTime", 0), **common)
                new_handle = got.get("extraInfo")
                if new_handle:
                    self._handles[new_handle] = msg_id

    def _queue(self, conn: Connection, ext: dict[str, str], offset_key: str) -> dict[str, Any]:
        return {"group": ext["consumerGroup"], "client_id": conn.client, "topic": ext["topic"], "broker": conn.broker,
                "queue_id": int(ext["queueId"]), "offset": int(ext[offset_key])}

    def _sends(self, conn: Connection, req: RemotingCommand, got: dict[str, str], now: int) -> None:
        ext, batch = send_header(req)
        properties = [e.properties for e in decode_batch_body(req.body)] if batch \
            else [decode_properties(ext.get("properties", ""))]
        ids = got.get("msgId", "").split(",")
        first = int(got["queueOffset"])
        for i, props in enumerate(properties):
            msg_id = props.get(UNIQ_KEY) or (ids[i] if i < len(ids) else None)
            self._row(conn, "SEND", now, topic=ext["topic"], broker=conn.broker, queue_id=int(got["queueId"]),
                      offset=first + i, msg_id=msg_id, tags=props.get(PROPERTY_TAGS) or "")

    def _heartbeat(self, conn: Connection, cmd: RemotingCommand, now: int) -> None:
        data = json.loads(cmd.body.decode("utf-8"))
        conn.client_id = data.get("clientID") or conn.client_id
        for consumer in data.get("consumerDataSet") or ():
            group, model = consumer.get("groupName"), str(consumer.get("messageModel"))
            model = model if model in MODELS else MODELS[0]
            for sub in consumer.get("subscriptionDataSet") or ():
                topic, expression = str(sub.get("topic", "")), str(sub.get("subString", "*"))
                if not group or not topic or topic.startswith(SYSTEM_TOPIC_PREFIX):
                    continue
                key = (conn.client, group, topic)
                if self._subscribed.get(key) != (expression, model):
                    self._subscribed[key] = (expression, model)
                    self._row(conn, "SUBSCRIBE", now, group=group, client_id=conn.client, topic=topic,
                              expression=expression, model=model)

    def _pops(self, conn: Connection, req: RemotingCommand, resp: RemotingCommand, now: int) -> None:
        records = decode_records(resp.body)
        ext = req.ext_fields
        for record, (handle, _mark) in zip(records, pop_handles(resp.ext_fields, records, str(conn.broker)),
                                           strict=True):
            self._handles[handle] = record.msg_id
            self._row(conn, "POP", now, group=ext["consumerGroup"], client_id=conn.client, topic=ext["topic"],
                      broker=conn.broker, queue_id=record.queue_id, offset=record.queue_offset,
                      msg_id=record.msg_id, handle=handle, invisible_ms=ext_int(ext, "invisibleTime", 0),
                      reconsume_times=record.reconsume_times)

    def summary(self) -> dict[str, Any]:
        return {"rows": dict(sorted(self.rows.items())), "passed_unrecorded": dict(self.passed.most_common()),
                "malformed_frames": self.malformed}


def count_records(body: bytes) -> int:
    """How many stored records a PULL_MESSAGE body holds, from their size fields alone (each record starts
    with its total size): the count is all a PULL_RESP row needs, and decoding every record would cost the
    recorder more than the forwarding."""
    count, at = 0, 0
    while at + 4 <= len(body):
        size = int.from_bytes(body[at:at + 4], "big")
        if size <= 0:
            raise ValueError(f"record {count} has size {size}")
        count, at = count + 1, at + size
    if at != len(body):
        raise ValueError("the last record is cut short")
    return count

