"""The broker's POP request codes (RocketMQ 5 remoting): decode -> call the core -> encode.

RocketMQ 5 serves POP consumption over the same remoting protocol as pulls (seed 004 §4): POP_MESSAGE
(200050), ACK_MESSAGE (200051), CHANGE_MESSAGE_INVISIBLETIME (200053), QUERY_ASSIGNMENT (400) and
SET_MESSAGE_REQUEST_MODE (401). The shapes are RocketMQ's own (PopMessageRequestHeader,
PopMessageResponseHeader, AckMessageRequestHeader, ChangeInvisibleTime{Request,Response}Header,
QueryAssignment{Request,Response}Body, SetMessageRequestModeRequestBody); no semantics live here.

What the wire adds:

* A popped message carries no receipt handle on the wire. The broker answers with the batch's pop time,
  invisible time and revive queue id, and per (retry mark, queue id) the checkpoint's start offset
  (``startOffsetInfo``) and the popped offsets (``msgOffsetInfo``); the client builds each message's
  handle (RocketMQ's ``extraInfo``) from them, exactly as the Java client's ``processPopResponse`` does.
  The reference's handles have that very shape (:mod:`reference.broker.pop.receipt`), so the handle a
  client builds is the one the core issued.
* Ack and change of invisible time name the topic the message was read from: the retry topic
  ``%RETRY%{group}_{topic}`` for a retried message; the core wants the topic the consumer named.
* An ordered pop (the header's ``order``) is answered with ``orderCountInfo`` as RocketMQ 5 writes it: per
  message ``{mark} qo{queueId}%{offset} {count}``, then per queue ``{mark} {queueId} {the least count}``
  (ExtraInfoUtil.buildQueueOffsetOrderCountInfo / buildQueueIdOrderCountInfo); the seed's
  buildOrderCountInfo(isRetry, queueId, count) is the per-queue entry.
* QUERY_ASSIGNMENT takes popShareQueueNum from the group's request mode, set by SET_MESSAGE_REQUEST_MODE.
  The reference is a POP broker: a (topic, group) with no mode set is answered as RocketMQ's
  ``defaultMessageRequestMode=POP`` with ``defaultPopShareQueueNum`` -1 would be. Modes live as long as the
  broker process (RocketMQ persists them; nothing in the suite restarts between setting and asking).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from reference.broker.broker import Broker
from reference.broker.pop.keys import normal_topic
from reference.broker.pop.protocol import PopMessageRequest, PoppedMessage, PopResponse
from reference.broker.pop.receipt import ReceiptHandle
from reference.net.remoting.command import RemotingCommand, RequestCode, encode_body
from reference.net.remoting.connection import RemotingConnection
from reference.net.remoting.fields import body_str, field_int, field_str, json_body
from reference.net.remoting.message_codec import encode_stored_record
from reference.rules.errors import require
from reference.rules.topics import is_retry_topic
from reference.store.message import StoredMessage

Handler = Callable[[RemotingConnection, RemotingCommand], RemotingCommand | None]

#: Separator inside startOffsetInfo / msgOffsetInfo entries (MessageConst.KEY_SEPARATOR) and between
#: entries (ExtraInfoUtil's ";"), and between the offsets of one entry.
KEY_SEPARATOR, ENTRY_SEPARATOR, OFFSET_SEPARATOR = " ", ";", ","
#: ExtraInfoUtil's marks of where a message was read: the topic itself or its (v1) retry topic.
NORMAL_MARK, RETRY_MARK = "0", "1"
#: The property holding a retried message's receipt handle (MessageConst.PROPERTY_POP_CK).
PROPERTY_POP_CK = "POP_CK"
#: The per-message key of an orderCountInfo entry: qo{queueId}%{queueOffset} (ExtraInfoUtil.QUEUE_OFFSET).
ORDER_OFFSET_KEY = "qo{queue_id}%{offset}"
#: How a header's boolean reads true (Java's Boolean.parseBoolean).
TRUE = "true"
#: MessageRequestMode names.
MODES = ("PULL", "POP")
#: popShareQueueNum of a (topic, group) whose mode was never set: every client pops every queue.
DEFAULT_POP_SHARE_QUEUE_NUM = -1
#: The C++/Java MessageModel enum as integers, accepted like names.
_MODELS = {"0": "BROADCASTING", "1": "CLUSTERING"}


class PopRequestHandlers:
    """The POP codes of the broker port, part of
    :class:`~reference.net.remoting.broker_handlers.BrokerRequestHandlers`' table."""

    def __init__(self, broker: Broker, store_host: bytes) -> None:
        self.broker = broker
        self.store_host = store_host
        #: (topic, group) -> (mode, popShareQueueNum), as SET_MESSAGE_REQUEST_MODE left it.
        self.modes: dict[tuple[str, str], tuple[str, int]] = {}

    def table(self) -> dict[int, Handler]:
        return {
            RequestCode.POP_MESSAGE: self.pop_message,
            RequestCode.ACK_MESSAGE: self.ack_message,
            RequestCode.CHANGE_MESSAGE_INVISIBLETIME: self.change_invisible_time,
            RequestCode.QUERY_ASSIGNMENT: self.query_assignment,
            RequestCode.SET_MESSAGE_REQUEST_MODE: self.set_message_request_mode,
        }

    # -- pop -----------------------------------------------------------------------------------
    def pop_message(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand | None:
        exp_type = cmd.ext_fields.get("expType") or "TAG"
        require(exp_type == "TAG", "expType", f"only TAG expressions are supported, got {exp_type!r}")
        request = PopMessageRequest(
            consumer_group=field_str(cmd, "consumerGroup"), topic=field_str(cmd, "topic"),
            queue_id=field_int(cmd, "queueId"), max_msg_nums=field_int(cmd, "maxMsgNums"),
            invisible_time_ms=field_int(cmd, "invisibleTime"), poll_time_ms=field_int(cmd, "pollTime", 0),
            expression=cmd.ext_fields.get("exp") or "*", client_id=conn.client_id,
            order=str(cmd.ext_fields.get("order", "")).lower() == TRUE,
        )

        def encode(response: PopResponse) -> RemotingCommand:
            return self._pop_response(cmd, response)

        conn.hold(request, encode)
        response = self.broker.pop(request, conn)
        if response is not None:
            conn.deliver_pop(request, response)
        return None

    def _pop_response(self, cmd: RemotingCommand, response: PopResponse) -> RemotingCommand:
        ext: dict[str, Any] = {
            "popTime": response.pop_time, "invisibleTime": response.invisible_time_ms,
            "reviveQid": response.revive_queue_id, "restNum": response.rest_num,
        }
        if not response.messages:
            return cmd.make_response(int(response.code), response.status, ext)
        starts: dict[str, int] = {}
        offsets: dict[str, list[int]] = {}
        for m in response.messages:
            handle = ReceiptHandle.parse(m.handle)
            key = f"{RETRY_MARK if handle.retry else NORMAL_MARK}{KEY_SEPARATOR}{handle.queue_id}"
            starts.setdefault(key, handle.start_offset)
            offsets.setdefault(key, []).append(handle.offset)
        ext["startOffsetInfo"] = ENTRY_SEPARATOR.join(f"{k}{KEY_SEPARATOR}{v}" for k, v in starts.items())
        ext["msgOffsetInfo"] = ENTRY_SEPARATOR.join(
            f"{k}{KEY_SEPARATOR}{OFFSET_SEPARATOR.join(map(str, v))}" for k, v in offsets.items()
        )
        if response.order_counts:
            ext["orderCountInfo"] = order_count_info(response.order_counts)
        body = b"".join(encode_stored_record(_stored(m), self.store_host) for m in response.messages)
        return cmd.make_response(int(response.code), None, ext, body)

    # -- ack and change of invisible time ------------------------------------------------------
    def ack_message(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand:
        group, topic, handle = self._handle_request(cmd)
        self.broker.ack(group, topic, handle, conn.client_id)
        return cmd.make_response()

    def change_invisible_time(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand:
        group, topic, handle = self._handle_request(cmd)
        invisible = field_int(cmd, "invisibleTime")
        result = self.broker.change_invisible_time(group, topic, handle, invisible, conn.client_id)
        new = ReceiptHandle.parse(result.handle)
        return cmd.make_response(ext_fields={
            "popTime": new.pop_time, "invisibleTime": new.invisible_time, "reviveQid": new.revive_queue_id,
        })

    def _handle_request(self, cmd: RemotingCommand) -> tuple[str, str, str]:
        """(group, the topic the consumer named, the handle): the header's topic is the retry topic for a
        retried message; queueId and offset repeat what the handle holds."""
        group, topic = field_str(cmd, "consumerGroup"), field_str(cmd, "topic")
        field_int(cmd, "queueId")
        field_int(cmd, "offset")
        return group, normal_topic(topic, group) if is_retry_topic(topic) else topic, field_str(cmd, "extraInfo")

    # -- assignment ----------------------------------------------------------------------------
    def set_message_request_mode(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand:
        doc = json_body(cmd)
        topic, group = body_str(doc, "topic"), body_str(doc, "consumerGroup")
        require(not is_retry_topic(topic), "topic", "a retry topic is always consumed in PULL mode")
        mode = str(doc.get("mode", "PULL"))
        require(mode in MODES, "mode", f"must be one of {MODES}")
        share = doc.get("popShareQueueNum", 0)
        require(isinstance(share, int) and not isinstance(share, bool), "popShareQueueNum", "must be an integer")
        self.modes[(topic, group)] = (mode, share)
        return cmd.make_response()

    def query_assignment(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand:
        doc = json_body(cmd)
        topic, group = str(doc.get("topic", "")), str(doc.get("consumerGroup", ""))
        model = str(doc.get("messageModel", "CLUSTERING"))
        mode, share = self.modes.get((topic, group), ("POP", DEFAULT_POP_SHARE_QUEUE_NUM))
        queues = self.broker.query_assignment(
            topic, group, str(doc.get("clientId", "")), str(doc.get("strategyName") or "AllocateMessageQueueAveragely"),
            _MODELS.get(model, model), share, mode,
        )
        body = {"messageQueueAssignments": [
            {"messageQueue": {"topic": q.topic, "brokerName": q.broker_name, "queueId": q.queue_id}, "mode": mode}
            for q in queues
        ]}
        return cmd.make_response(body=encode_body(body))


def _stored(m: PoppedMessage) -> StoredMessage:
    """A popped message as the record the broker answers with. A retried message is read from the retry topic;
    as RocketMQ 5 by default (popResponseReturnActualRetryTopic=false) its record names the topic the consumer
    popped and carries its handle in POP_CK, because the client could not build it from the start offsets of the
    topic's own queues."""
    properties = {**m.properties, PROPERTY_POP_CK: m.handle} if m.retry else m.properties
    return StoredMessage(
        topic=m.topic, queue_id=m.queue_id, queue_offset=m.queue_offset, commit_log_offset=m.commit_log_offset,
        size=0, body=m.body, tags=m.tags, keys=m.keys, properties=properties,
        store_timestamp=m.store_timestamp, born_timestamp=m.born_timestamp or int(time.time() * 1000),
        reconsume_times=m.reconsume_times, msg_id="", unique_id=m.msg_id,
    )


def order_count_info(counts: Mapping[tuple[bool, int, int], int]) -> str:
    """orderCountInfo as RocketMQ 5 writes it: one entry per message, then one per queue with its least count."""
    entries: list[str] = []
    per_queue: dict[tuple[bool, int], int] = {}
    for (retry, queue_id, offset), count in sorted(counts.items()):
        mark = RETRY_MARK if retry else NORMAL_MARK
        key = ORDER_OFFSET_KEY.format(queue_id=queue_id, offset=offset)
        entries.append(KEY_SEPARATOR.join((mark, key, str(count))))
        per_queue[(retry, queue_id)] = min(count, per_queue.get((retry, queue_id), count))
    for (retry, queue_id), count in per_queue.items():
        entries.append(KEY_SEPARATOR.join((RETRY_MARK if retry else NORMAL_MARK, str(queue_id), str(count))))
    return ENTRY_SEPARATOR.join(entries)
