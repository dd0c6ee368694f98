"""ReceiveMessage: a POP over every queue of the topic, held by the core's long polling when nothing is there.

The stream is what the proxy writes and the client needs (protocols/rocketmq-grpc-v5.md §3.6): one ``status``,
then one response per message, then ``delivery_timestamp``. An empty pop after the poll time is
MESSAGE_NOT_FOUND "no new message"; a refusal is its status and the timestamp. The request's queue id is ignored,
as the proxy ignores it (a simple consumer asking queue 1 would otherwise wait out a long poll while the message
sits in queue 0).

Holding: the core answers at once or keeps the pop in its :class:`~reference.broker.pop.long_polling.
PopLongPollingService` and answers through the channel's ``deliver_pop`` later, woken by an arrival or by its
deadline on the broker's clock (real or simulated) — the same hold the remoting front's POP_MESSAGE uses.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

from reference.broker.pop.protocol import ALL_QUEUES, PopMessageRequest, PoppedMessage, PopResponse
from reference.net.grpc import fifo
from reference.net.grpc.codes import pop_code, status
from reference.net.grpc.convert import FILTER_TAG, duration, duration_ms, resource_name, timestamp, wire_message
from reference.net.grpc.limits import PROXY_DEFAULTS, ReceiveLimits
from reference.net.grpc.state import FrontState
from reference.rules.codes import ResponseCode
from reference.rules.errors import InvalidRequest, require

#: ProxyConfig.longPollingReserveTimeInMillis: the answer must leave this much of the deadline to travel.
LONG_POLLING_RESERVE_MS = 100
#: Auto-renewing (push) consumers get 60 s (the proxy's default for a receive without invisible_duration).
DEFAULT_INVISIBLE_MS = 60_000
#: ReceiveMessageResponseStreamWriter.NACK_INVISIBLE_TIME: how soon a message the client could not take is back.
NACK_INVISIBLE_MS = 1_000
#: The client's default request timeout (§1.2) when its settings did not say.
DEFAULT_REQUEST_TIMEOUT_MS = 3_000


class HeldReceive:
    """The core's :class:`~reference.broker.pop.protocol.PopChannel` for one ReceiveMessage call. A call the
    client cancelled while held (a push consumer shutting down) may still be answered with messages by a later
    arrival: they are given back (:func:`release`) rather than left invisible for their whole invisible time."""

    def __init__(self, key: str, state: FrontState, request: PopMessageRequest) -> None:
        self.key = key
        self.state = state
        self.request = request
        self.answer: asyncio.Future[PopResponse] = asyncio.get_running_loop().create_future()

    def deliver_pop(self, request: PopMessageRequest, response: PopResponse) -> None:
        if self.answer.done():
            release(self.state, request, response.messages)
        else:
            self.state.late_answers += 1
            self.answer.set_result(response)

    def end_empty(self, now_ms: int) -> None:
        """The broker holding this receive was replaced: answer it as an empty poll, as a held pop the old broker
        dropped would have been had it run out (the client asks again, of the new broker)."""
        self.deliver_pop(self.request, PopResponse(ResponseCode.POLLING_TIMEOUT, "NO_MESSAGE", (), 0, now_ms,
                                                   self.request.invisible_time_ms))


def release(state: FrontState, request: PopMessageRequest, popped: Sequence[PoppedMessage]) -> None:
    """Messages popped for a call that can no longer take them: visible again after the proxy's nack time, as the
    proxy's stream writer does when a write fails (processThrowableWhenWriteMessage)."""
    for message in popped:
        with contextlib.suppress(InvalidRequest):  # acked or revived meanwhile: nothing to give back
            state.broker.change_invisible_time(request.consumer_group, request.topic, message.handle,
                                               NACK_INVISIBLE_MS, request.client_id)


def poll_time_ms(request: Any, remaining_ms: int | None, request_timeout_ms: int,
                 limits: ReceiveLimits = PROXY_DEFAULTS) -> int:
    """The proxy's rule: the request's long_polling_timeout (or the deadline less half the request timeout),
    clamped to the limits' [min_hold_ms, max_hold_ms] (5 s, 20 s by default), never past the deadline; a negative
    long_polling_timeout is refused (the proxy clamps it: a reviewed SHOULD of the reference, POP-11)."""
    if request.HasField("long_polling_timeout"):
        poll = duration_ms(request.long_polling_timeout)
        # Stricter than the proxy, which clamps a negative time to its minimum hold: it is malformed (POP-11).
        require(poll >= 0, "long_polling_timeout", f"must not be negative, got {poll} ms", "ILLEGAL_POLLING_TIME")
    elif remaining_ms is not None:
        poll = remaining_ms - request_timeout_ms // 2
    else:
        poll = limits.max_hold_ms
    poll = min(max(poll, limits.min_hold_ms), limits.max_hold_ms)
    if remaining_ms is not None and poll > remaining_ms - LONG_POLLING_RESERVE_MS:
        if remaining_ms - LONG_POLLING_RESERVE_MS < limits.min_hold_ms:
            raise InvalidRequest("deadline", f"{remaining_ms} ms remain, less than the {limits.min_hold_ms} ms a "
                                 "long poll needs", "ILLEGAL_POLLING_TIME")
        poll = remaining_ms - LONG_POLLING_RESERVE_MS
    return poll


def pop_request(state: FrontState, request: Any, client_id: str, remaining_ms: int | None) -> PopMessageRequest:
    """The v5 request as the core's pop; every refusal names the v5 field."""
    group = resource_name(request.group, "group")
    topic = resource_name(request.message_queue.topic, "message_queue.topic")
    most = state.broker.pop_service.config.max_msg_nums
    require(1 <= request.batch_size <= most, "batch_size", f"must be in [1, {most}], got {request.batch_size}")
    if request.HasField("invisible_duration"):
        invisible = duration_ms(request.invisible_duration)
    elif request.auto_renew:
        invisible = DEFAULT_INVISIBLE_MS
    else:
        raise InvalidRequest("invisible_duration", "must be set unless auto_renew is true", "ILLEGAL_INVISIBLE_TIME")
    limits = state.limits
    require(limits.min_invisible_ms <= invisible <= limits.max_invisible_ms, "invisible_duration",
            f"must be in [{limits.min_invisible_ms}, {limits.max_invisible_ms}] ms, got {invisible}",
            "ILLEGAL_INVISIBLE_TIME")
    expression = request.filter_expression
    require(expression.type in (0, FILTER_TAG), "filter_expression.type",
            "only TAG expressions are supported by the reference", "ILLEGAL_FILTER_EXPRESSION")
    client = state.registry.clients.get(client_id)
    settings = client.settings if client is not None else None
    timeout = duration_ms(settings.request_timeout) if settings is not None and settings.HasField(
        "request_timeout") else DEFAULT_REQUEST_TIMEOUT_MS
    return PopMessageRequest(group, topic, ALL_QUEUES, request.batch_size, invisible,
                             poll_time_ms(request, remaining_ms, timeout, limits), expression.expression or "*",
                             client_id, order=fifo.is_fifo(state, group))


async def receive_message(state: FrontState, request: Any, client_id: str,
                          remaining_ms: int | None) -> AsyncIterator[Any]:
    """The stream's responses; refusals raise before the first is yielded (the front answers them)."""
    service = state.service
    pop = pop_request(state, request, client_id, remaining_ms)
    channel = HeldReceive(f"grpc:{client_id}", state, pop)
    answer = state.broker.pop(pop, channel)
    if answer is None:
        state.held.add(channel)
        try:
            answer = await channel.answer
        finally:
            state.held.discard(channel)
    code, message = pop_code(answer.code)
    if request.auto_renew:  # ReceiveMessageActivity tracks an auto-renew receive's handles, and only those
        state.renewals.track(client_id, pop.consumer_group, answer.messages)
    written = 0
    try:
        yield service.ReceiveMessageResponse(status=status(state.definition, code, message))
        for popped in answer.messages:
            wire = wire_message(state.definition, popped, state.store_host)
            wire.system_properties.invisible_duration.CopyFrom(duration(answer.invisible_time_ms))
            wire.system_properties.delivery_attempt = fifo.delivery_attempt(popped, answer)
            yield service.ReceiveMessageResponse(message=wire)
            written += 1
    except (asyncio.CancelledError, GeneratorExit):  # the client went away mid-stream
        for unwritten in answer.messages[written:]:
            state.renewals.forget(client_id, pop.consumer_group, unwritten.handle)
        release(state, pop, answer.messages[written:])
        raise
    yield delivery_timestamp(state)


def delivery_timestamp(state: FrontState) -> Any:
    """The stream's last response: without it the push consumer never calls its listener (§3.6)."""
    return state.service.ReceiveMessageResponse(delivery_timestamp=timestamp(state.broker.clock.now_ms()))
