"""RocketMQ 5 gRPC calls seen by the recorder, turned into trace schema v1 rows.

The gRPC recorder (:mod:`.grpc_proxy`) hands every request and answer of ``apache.rocketmq.v2.MessagingService``
here, already decoded with the generated stubs. Rows are the broker's view (source ``broker:<name>``, the broker
name the proxy's routes give), timestamped when the recorder saw the answer; the client is the
``x-mq-client-id`` header every v5 client sends.

==================================  ==========================================================================
SendMessage                         SEND per entry answered OK (topic, msg_id, tag, queue offset)
ReceiveMessage                      POP per message streamed back (queue, offset, msg_id, receipt handle,
                                    invisible time asked for, delivery attempt - 1 as reconsume_times)
AckMessage                          ACK per entry, with the entry's status
ChangeInvisibleDuration             CHANGE_INVISIBLE when answered OK (the new handle names the same message)
Telemetry (client settings)         SUBSCRIBE per new (group, topic, expression) of the client's subscription
NotifyClientTermination             UNSUBSCRIBE
==================================  ==========================================================================

**The queue of a send is not on the wire.** A v5 SendMessage names no queue (the proxy picks one) and its answer
gives only the queue offset. A SEND row needs both, so it is held until the message is first received (its POP
says the queue), and then written with the send's time; sends never received by the end of the recording are
written then with ``queue_id`` -1 and ``detail`` saying why, so no accepted message is left out of the trace.
The audit expects a message per queue, so such a SEND is never *expected* by a consumer (docs/audit.md).

Every other call is forwarded and counted by method in :attr:`GrpcRecorder.passed`; a message that does not
decode is counted in :attr:`GrpcRecorder.malformed`. Nothing here can fail a call.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

from reference.clock import RealClock
from reference.net.grpc.protos import Stubs
from reference.trace import Trace

#: The metadata header a v5 client names itself with (rocketmq-grpc-v5 §1.1).
CLIENT_ID_HEADER = "x-mq-client-id"
#: The v5 ``Code.OK``.
CODE_OK = 20000
#: What a SEND row held until the end says about its queue.
QUEUE_NOT_ON_WIRE = json.dumps({"queue_id": "not on the gRPC wire: the proxy chose it and no receive named it"})


#: Where a POP receipt handle (the broker's ExtraInfo) carries its invisible time, in ms.
HANDLE_INVISIBLE_FIELD = 2


@dataclass
class HeldSend:
    """A send answered OK whose queue is not known yet."""

    ts_ms: int
    broker: str
    topic: str
    offset: int
    tags: str


def handle_invisible_ms(handle: str) -> int:
    """The invisible time a receipt handle was issued with, for a ReceiveMessage that asked none (a PushConsumer's
    ``auto_renew``: the server picks it, 60 s on the proxy and the reference); 0 when the handle does not say.

    The broker's POP handle (its ExtraInfo, which the proxy and the reference's front hand out as it is) is
    space-separated, the pop time second and the invisible time third. Without this the POP row said 0, and the
    audit's early-redelivery check had nothing to judge the push consumers' redeliveries against."""
    fields = handle.split(" ")
    if len(fields) > HANDLE_INVISIBLE_FIELD and fields[HANDLE_INVISIBLE_FIELD].isdigit():
        return int(fields[HANDLE_INVISIBLE_FIELD])
    return 0


def _duration_ms(d: Any) -> int:
    return int(d.seconds) * 1000 + int(d.nanos) // 1_000_000


class GrpcRecorder:
    """Calls in, trace rows out (into ``trace``); one per recording, shared by every call."""

    def __init__(self, trace: Trace, stubs: Stubs, broker: str) -> None:
        self.trace = trace
        self.stubs = stubs
        #: The broker the rows name: the latest QueryRoute's (one upstream endpoint, so one broker name in LOCAL
        #: mode), ``broker`` until a route is seen.
        self.broker = broker
        self.clock = trace.clock or RealClock()
        self.passed: Counter[str] = Counter()
        self.malformed = 0
        self.rows: Counter[str] = Counter()
        self._held: dict[str, HeldSend] = {}
        self._handles: dict[str, str] = {}
        self._subscribed: dict[tuple[str, str, str], str] = {}

    # -- input ---------------------------------------------------------------------------------
    def call(self, method: str, client: str, request: bytes, answers: list[bytes]) -> None:
        """One finished unary or server-streaming call: its request and every answer message."""
        handler = getattr(self, f"_on_{method}", None)
        if handler is None:
            self.passed[method] += 1
            return
        try:
            handler(client or "unknown", request, answers, self.clock.now_ms())
        except Exception:  # noqa: BLE001 - a message that does not decode is a count, never a failed call
            self.malformed += 1

    def telemetry_from_client(self, client: str, command: bytes) -> None:
        """One TelemetryCommand a client wrote (its settings name its subscriptions)."""
        try:
            cmd = self.stubs.service.TelemetryCommand.FromString(command)
        except Exception:  # noqa: BLE001
            self.malformed += 1
            return
        if not cmd.HasField("settings") or not cmd.settings.HasField("subscription"):
            return
        sub = cmd.settings.subscription
        for entry in sub.subscriptions:
            topic, expression = entry.topic.name, entry.expression.expression or "*"
            key = (client, sub.group.name, topic)
            if self._subscribed.get(key) != expression:
                self._subscribed[key] = expression
                self._row("SUBSCRIBE", self.clock.now_ms(), group=sub.group.name, client_id=client, topic=topic,
                          expression=expression, model="CLUSTERING")

    def finish(self) -> None:
        """Write the sends whose queue never showed (before the trace's END rows)."""
        for msg_id, held in sorted(self._held.items(), key=lambda kv: kv[1].ts_ms):
            self._send_row(msg_id, held, -1, QUEUE_NOT_ON_WIRE)
        self._held.clear()

    # -- mapping -------------------------------------------------------------------------------
    def _row(self, event: str, ts_ms: int, **columns: Any) -> None:
        """Rows naming a broker are that broker's; the others the current one's."""
        self.trace.source(f"broker:{columns.get('broker') or self.broker}").record(event, ts_ms, **columns)
        self.rows[event] += 1

    def _send_row(self, msg_id: str, held: HeldSend, queue_id: int, detail: str | None = None) -> None:
        extra = {"detail": detail} if detail else {}
        self._row("SEND", held.ts_ms, topic=held.topic, broker=held.broker, queue_id=queue_id,
                  offset=held.offset, msg_id=msg_id, tags=held.tags, **extra)

    def _on_QueryRoute(self, client: str, request: bytes, answers: list[bytes], now: int) -> None:
        """Routes name the broker behind the endpoint: its name is the rows' ``broker`` from then on."""
        resp = self.stubs.service.QueryRouteResponse.FromString(answers[0])
        for queue in resp.message_queues:
            if queue.broker.name:
                self.broker = queue.broker.name
                return

    def _on_SendMessage(self, client: str, request: bytes, answers: list[bytes], now: int) -> None:
        req = self.stubs.service.SendMessageRequest.FromString(request)
        resp = self.stubs.service.SendMessageResponse.FromString(answers[0])
        for message, entry in zip(req.messages, resp.entries, strict=False):
            if entry.status.code != CODE_OK:
                continue
            msg_id = entry.message_id or message.system_properties.message_id
            self._held[msg_id] = HeldSend(now, self.broker, message.topic.name, int(entry.offset),
                                          message.system_properties.tag)

    def _on_ReceiveMessage(self, client: str, request: bytes, answers: list[bytes], now: int) -> None:
        req = self.stubs.service.ReceiveMessageRequest.FromString(request)
        asked = _duration_ms(req.invisible_duration) if req.HasField("invisible_duration") else None
        for raw in answers:
            resp = self.stubs.service.ReceiveMessageResponse.FromString(raw)
            if resp.WhichOneof("content") != "message":
                continue
            msg, props = resp.message, resp.message.system_properties
            held = self._held.pop(props.message_id, None)
            if held is not None:
                self._send_row(props.message_id, held, props.queue_id)
            self._handles[props.receipt_handle] = props.message_id
            self._row("POP", now, group=req.group.name, client_id=client, topic=msg.topic.name, broker=self.broker,
                      queue_id=props.queue_id, offset=props.queue_offset, msg_id=props.message_id,
                      handle=props.receipt_handle,
                      invisible_ms=asked if asked is not None else handle_invisible_ms(props.receipt_handle),
                      reconsume_times=max(props.delivery_attempt - 1, 0))

    def _on_AckMessage(self, client: str, request: bytes, answers: list[bytes], now: int) -> None:
        req = self.stubs.service.AckMessageRequest.FromString(request)
        resp = self.stubs.service.AckMessageResponse.FromString(answers[0])
        results = {e.receipt_handle: e.status for e in resp.entries}
        for entry in req.entries:
            status = results.get(entry.receipt_handle, resp.status)
            code = "OK" if status.code == CODE_OK else self._code_name(status.code)
            self._row("ACK", now, group=req.group.name, client_id=client, handle=entry.receipt_handle,
                      msg_id=entry.message_id or self._handles.get(entry.receipt_handle), status=code)

    def _on_ChangeInvisibleDuration(self, client: str, request: bytes, answers: list[bytes], now: int) -> None:
        req = self.stubs.service.ChangeInvisibleDurationRequest.FromString(request)
        resp = self.stubs.service.ChangeInvisibleDurationResponse.FromString(answers[0])
        if resp.status.code != CODE_OK:
            return
        msg_id = req.message_id or self._handles.get(req.receipt_handle)
        self._row("CHANGE_INVISIBLE", now, group=req.group.name, client_id=client, handle=req.receipt_handle,
                  invisible_ms=_duration_ms(req.invisible_duration), msg_id=msg_id)
        if resp.receipt_handle and msg_id:
            self._handles[resp.receipt_handle] = msg_id

    def _on_NotifyClientTermination(self, client: str, request: bytes, answers: list[bytes], now: int) -> None:
        req = self.stubs.service.NotifyClientTerminationRequest.FromString(request)
        if req.group.name:
            self._row("UNSUBSCRIBE", now, group=req.group.name, client_id=client)

    def _code_name(self, code: int) -> str:
        try:
            return str(self.stubs.definition.Code.Name(code))
        except ValueError:
            return str(code)

    def summary(self) -> dict[str, Any]:
        return {"rows": dict(sorted(self.rows.items())), "passed_unrecorded": dict(self.passed.most_common()),
                "malformed_messages": self.malformed}
