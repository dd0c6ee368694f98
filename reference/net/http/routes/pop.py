"""POP consumption: the broker assigns the queues, pops a batch invisible for a while, and takes acks and
invisible-time changes by receipt handle. A pop with a poll time and nothing to pop is held
(:mod:`reference.net.http.held`)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from reference.broker.pop.assignment import DEFAULT_STRATEGY
from reference.broker.pop.protocol import PopMessageRequest
from reference.net.http import models as m
from reference.net.http.encode import pop_result
from reference.net.http.errors import ERRORS
from reference.net.http.held import answer_or_hold
from reference.net.http.routes.params import GroupPath, TopicPath
from reference.net.http.state import Front

router = APIRouter(responses=ERRORS, tags=["pop"])

#: The links a popped batch offers to a generated client (schemathesis follows them): its first handle's ack and
#: invisible-time change.
HANDLE_LINKS = {
    "AckFirst": {"operationId": "ackMessage",
                 "parameters": {"group": "$request.path.group", "topic": "$request.path.topic"},
                 "requestBody": {"receiptHandle": "$response.body#/messages/0/receiptHandle"}},
    "ChangeInvisibleTimeOfFirst": {
        "operationId": "changeInvisibleTime",
        "parameters": {"group": "$request.path.group", "topic": "$request.path.topic"},
        "requestBody": {"receiptHandle": "$response.body#/messages/0/receiptHandle", "invisibleTimeMs": 1_000}},
}


@router.post(
    "/groups/{group}/topics/{topic}/pop", operation_id="popMessages", response_model=m.PopResult,
    openapi_extra={"responses": {"200": {"links": HANDLE_LINKS}}},
    description="Pop a batch: each message becomes invisible to the group for `invisibleTimeMs` unless "
                "acknowledged. With `pollTimeMs` and nothing to pop the broker holds the pop: the status line "
                "comes at once, the body when a matching message arrives or the poll time ends.",
)
async def pop(front: Front, group: GroupPath, topic: TopicPath, body: m.PopBody) -> Any:
    front.check_topic(topic, body.queueId if body.queueId >= 0 else None)
    front.check_retry_topic(group, topic)
    request = PopMessageRequest(
        group, topic, body.queueId, body.maxMsgNums, body.invisibleTimeMs, body.pollTimeMs, body.expression,
        body.clientId or "",
    )
    broker, held = front.broker, front.held
    return answer_or_hold(held, request, lambda: broker.pop(request, held), pop_result)


@router.post("/groups/{group}/topics/{topic}/ack", operation_id="ackMessage", response_model=m.Acked)
async def ack(front: Front, group: GroupPath, topic: TopicPath, body: m.AckBody) -> m.Acked:
    front.check_topic(topic)
    return m.Acked(msgId=front.broker.ack(group, topic, body.receiptHandle, body.clientId or "").msg_id)


@router.post(
    "/groups/{group}/topics/{topic}/invisible-time", operation_id="changeInvisibleTime",
    response_model=m.InvisibleTimeChanged,
    openapi_extra={"responses": {"200": {"links": {
        "AckWithNewHandle": {"operationId": "ackMessage",
                             "parameters": {"group": "$request.path.group", "topic": "$request.path.topic"},
                             "requestBody": {"receiptHandle": "$response.body#/receiptHandle"}},
    }}}},
)
async def change_invisible_time(front: Front, group: GroupPath, topic: TopicPath,
                                body: m.ChangeInvisibleBody) -> m.InvisibleTimeChanged:
    front.check_topic(topic)
    r = front.broker.change_invisible_time(group, topic, body.receiptHandle, body.invisibleTimeMs,
                                           body.clientId or "")
    return m.InvisibleTimeChanged(msgId=r.msg_id, receiptHandle=r.handle, popTime=r.pop_time,
                                  invisibleTimeMs=r.invisible_time_ms)


@router.get("/groups/{group}/topics/{topic}/assignment", operation_id="queryAssignment", response_model=m.Assignment,
            description="The queues a POP consumer of the group should pop (the broker runs the allocation).")
async def query_assignment(
    front: Front, group: GroupPath, topic: TopicPath,
    clientId: Annotated[str, Query(min_length=1, max_length=255, pattern=r"^[^\x00-\x1f]+$")],  # noqa: N803
    strategy: Annotated[m.PopStrategy, Query()] = DEFAULT_STRATEGY,  # type: ignore[assignment]  # one of them
    popShareQueueNum: Annotated[int, Query(ge=-1, le=m.INT32_MAX)] = -1,  # noqa: N803
    messageModel: Annotated[m.MessageModel, Query()] = "CLUSTERING",  # noqa: N803
    mode: Annotated[m.RequestMode, Query(description="POP (allocate4Pop) or PULL (the strategy's own)")] = "POP",
) -> m.Assignment:
    front.check_topic(topic)
    queues = front.broker.query_assignment(topic, group, clientId, strategy, messageModel, popShareQueueNum, mode)
    return m.Assignment(consumerGroup=group, clientId=clientId, queues=[
        m.AssignedQueue(topic=q.topic, brokerName=q.broker_name, queueId=q.queue_id) for q in queues
    ])
