"""AckMessage, ChangeInvisibleDuration and ForwardMessageToDeadLetterQueue: calls on the core's POP acks.

AckMessage answers per entry, and sums the entries up in the top-level status, the only one the client reads
(protocols/rocketmq-grpc-v5.md §3.7, the proxy's AckMessageActivity): all OK is OK, all refused alike is that
code, a mix is MULTIPLE_RESULTS.
"""

from __future__ import annotations

from typing import Any

from reference.broker.pop.receipt import ReceiptHandle
from reference.net.grpc import fifo
from reference.net.grpc.codes import MULTIPLE_RESULTS, OK, refusal_status, status
from reference.net.grpc.convert import duration_ms, resource_name
from reference.net.grpc.state import FrontState
from reference.rules.errors import InvalidRequest, require
from reference.rules.topics import pop_retry_topic
from reference.store.names import check_name

#: ProxyConfig.maxInvisibleTimeMills: a change of invisible time is in (0, 12 h].
MAX_INVISIBLE_MS = 12 * 3_600_000


def _group_topic(request: Any) -> tuple[str, str]:
    group, topic = resource_name(request.group, "group"), resource_name(request.topic, "topic")
    check_name(group, "group")
    check_name(topic, "topic")
    return group, topic


def ack_message(state: FrontState, request: Any, client_id: str) -> Any:
    group, topic = _group_topic(request)
    require(len(request.entries) >= 1, "entries", "must hold at least one entry")
    d = state.definition
    results = []
    for entry in request.entries:
        try:
            handle = state.renewals.forget(client_id, group, entry.receipt_handle)  # the newest renewed handle
            state.broker.ack(group, topic, handle, client_id)
            entry_status = status(d, OK)
        except InvalidRequest as exc:
            entry_status = refusal_status(d, exc)
        results.append(state.service.AckMessageResultEntry(
            message_id=entry.message_id, receipt_handle=entry.receipt_handle, status=entry_status))
    codes = {r.status.code for r in results}
    if len(codes) == 1:
        top = results[0].status
    else:
        top = status(d, MULTIPLE_RESULTS, "the entries have different results")
    return state.service.AckMessageResponse(status=top, entries=results)


def change_invisible_duration(state: FrontState, request: Any, client_id: str) -> Any:
    group, topic = _group_topic(request)
    require(request.HasField("invisible_duration"), "invisible_duration", "must be set", "ILLEGAL_INVISIBLE_TIME")
    invisible = duration_ms(request.invisible_duration)
    require(0 < invisible <= MAX_INVISIBLE_MS, "invisible_duration",
            f"must be in (0, {MAX_INVISIBLE_MS}] ms, got {invisible}", "ILLEGAL_INVISIBLE_TIME")
    handle = state.renewals.forget(client_id, group, request.receipt_handle)
    result = state.broker.change_invisible_time(group, topic, handle, invisible, client_id)
    return state.service.ChangeInvisibleDurationResponse(status=status(state.definition, OK),
                                                         receipt_handle=result.handle)


def forward_to_dead_letter_queue(state: FrontState, request: Any, client_id: str) -> Any:
    """The message is stored in ``%DLQ%{group}`` first, then acked: a crash in between redelivers it (and it may
    be dead-lettered twice), never loses it."""
    group, topic = _group_topic(request)
    broker = state.broker
    handle_text = state.renewals.forget(client_id, group, request.receipt_handle)
    handle: ReceiptHandle = fifo.resolve(broker, group, topic, handle_text)
    read_topic = pop_retry_topic(group, topic) if handle.retry else topic
    found = broker.store.get_message(group, read_topic, handle.queue_id, handle.offset, 1, None).messages
    if not found:
        raise InvalidRequest("receipt_handle", "the message it names is no longer in the store",
                             "INVALID_RECEIPT_HANDLE")
    broker.send_back(group, found[0], delay_level=-1)
    broker.ack(group, topic, handle_text, client_id)
    return state.service.ForwardMessageToDeadLetterQueueResponse(status=status(state.definition, OK))
