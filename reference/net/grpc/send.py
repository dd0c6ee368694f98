"""SendMessage: each v5 message stored by the core, one result entry per message.

The reference stores normal and FIFO messages (a FIFO message goes to the queue of its group's hash, and keeps its
group as ``__SHARDINGKEY``). Delay and transaction messages are refused with UNSUPPORTED and a message saying
why: the core has no timer store and no half-message store, and accepting them as normal messages would deliver a
delayed message early or a message whose transaction may still roll back.
"""

from __future__ import annotations

from typing import Any

from reference.net.grpc.codes import OK, status
from reference.net.grpc.convert import DELAY, FIFO, NORMAL, TRANSACTION, resource_name, stored_message
from reference.net.grpc.state import FrontState
from reference.rules.errors import InvalidRequest, require
from reference.store.names import check_name

#: Why a message type is refused (docs/grpc.md, "What the front refuses").
UNSUPPORTED_TYPES = {
    DELAY: "DELAY messages are not supported by the reference (no timer store: it would deliver them early)",
    TRANSACTION: "TRANSACTION messages are not supported by the reference (no half-message store or "
                 "transaction check)",
}


def send_message(state: FrontState, request: Any, client_id: str) -> Any:
    require(len(request.messages) >= 1, "messages", "must hold at least one message")
    d = state.definition
    broker = state.broker
    topics = {resource_name(m.topic, "messages.topic") for m in request.messages}
    require(len(topics) == 1, "messages.topic", "every message of one request must name the same topic")
    topic = topics.pop()
    check_name(topic, "topic")
    queue_nums = broker.store.queue_nums(topic)  # TOPIC_NOT_FOUND: a route lookup creates it
    wires = []
    for wire in request.messages:
        kind = int(wire.system_properties.message_type)
        if kind in UNSUPPORTED_TYPES:
            raise InvalidRequest("message_type", UNSUPPORTED_TYPES[kind], "UNSUPPORTED")
        if wire.system_properties.HasField("delivery_timestamp"):
            raise InvalidRequest("delivery_timestamp", UNSUPPORTED_TYPES[DELAY], "UNSUPPORTED")
        group = str(wire.system_properties.message_group) if wire.system_properties.HasField("message_group") else None
        require(kind in (0, NORMAL, FIFO), "message_type", f"must be NORMAL or FIFO, got {kind}")
        require((kind == FIFO) == (group is not None) or kind == 0, "message_type",
                "a FIFO message must carry a message_group, and only a FIFO message may",
                "MESSAGE_PROPERTY_CONFLICT_WITH_TYPE")
        max_body = broker.store.config.max_message_size
        if len(wire.body) > max_body:
            raise InvalidRequest("body", f"must be at most {max_body} bytes, got {len(wire.body)}",
                                 "MESSAGE_BODY_TOO_LARGE")
        wires.append(stored_message(wire, topic, state.send_queue(topic, queue_nums, group)))
    entries = []
    for message in wires:  # every message checked before the first is stored
        result = broker.send(message, producer=client_id)
        entries.append(state.service.SendResultEntry(status=status(d, OK), message_id=result.unique_id,
                                         offset=result.queue_offset))
    return state.service.SendMessageResponse(status=status(d, OK), entries=entries)
