"""Pulsar-style flow permits: a consumer attaches to a subscription, grants permits, and the broker dispatches
that many messages to it; the front records what was dispatched so that a client can read it back."""

from __future__ import annotations

from fastapi import APIRouter

from reference.broker.permits.protocol import InitialPosition, RecordingPermitChannel
from reference.net.http import encode
from reference.net.http import models as m
from reference.net.http.errors import ERRORS
from reference.net.http.routes.params import ClientPath, GroupPath, TopicPath
from reference.net.http.state import Front

router = APIRouter(responses=ERRORS, tags=["permits"])

CONSUMER_PATH = "/groups/{group}/topics/{topic}/permit-consumers/{clientId}"
#: How a subscription's answer links to the consumer's other operations (schemathesis follows them).
_CONSUMER_PARAMS = {"group": "$request.path.group", "topic": "$request.path.topic",
                    "clientId": "$response.body#/clientId"}


@router.post(
    "/groups/{group}/topics/{topic}/permit-consumers", operation_id="subscribePermits", status_code=201,
    response_model=m.PermitConsumer,
    description="Attach a consumer to the subscription `group` (created on first use) with 0 permits.",
    openapi_extra={"responses": {"201": {"links": {
        "Flow": {"operationId": "flowPermits", "parameters": _CONSUMER_PARAMS, "requestBody": {"messagePermits": 10}},
        "Permits": {"operationId": "permitConsumer", "parameters": _CONSUMER_PARAMS},
        "Dispatched": {"operationId": "dispatchedMessages", "parameters": _CONSUMER_PARAMS},
        "Ack": {"operationId": "ackPermitMessages", "parameters": _CONSUMER_PARAMS},
        "Redeliver": {"operationId": "redeliverUnacknowledged", "parameters": _CONSUMER_PARAMS},
        "Close": {"operationId": "closePermitConsumer", "parameters": _CONSUMER_PARAMS},
    }}}},
)
async def subscribe_permits(front: Front, group: GroupPath, topic: TopicPath,
                            body: m.PermitSubscribe) -> m.PermitConsumer:
    front.check_topic(topic, body.queueId)
    channel = RecordingPermitChannel(f"permits-{body.clientId}")
    front.broker.subscribe_permits(group, topic, body.clientId, channel, body.subType, body.queueId,
                                   InitialPosition(body.initialPosition))
    front.permit_channels[(group, body.clientId, topic)] = channel
    return front.permit_consumer(group, topic, body.clientId)


@router.get(CONSUMER_PATH, operation_id="permitConsumer", response_model=m.PermitConsumer)
async def get_permit_consumer(front: Front, group: GroupPath, topic: TopicPath,
                              clientId: ClientPath) -> m.PermitConsumer:  # noqa: N803
    return front.permit_consumer(group, topic, clientId)


@router.post(f"{CONSUMER_PATH}/flow", operation_id="flowPermits", response_model=m.PermitConsumer,
             description="FLOW: add `messagePermits` to the consumer's credit.")
async def flow(front: Front, group: GroupPath, topic: TopicPath, clientId: ClientPath,  # noqa: N803
               body: m.Flow) -> m.PermitConsumer:
    front.broker.flow(group, clientId, topic, body.messagePermits)
    return front.permit_consumer(group, topic, clientId)


@router.get(f"{CONSUMER_PATH}/messages", operation_id="dispatchedMessages", response_model=m.Dispatched)
async def dispatched(front: Front, group: GroupPath, topic: TopicPath,
                     clientId: ClientPath) -> m.Dispatched:  # noqa: N803
    channel = front.permit_channels.get((group, clientId, topic))
    if channel is None:  # never subscribed here (or not since a restart)
        front.broker.permits.consumer(group, clientId, topic)  # raises CONSUMER_NOT_FOUND
    messages = [encode.dispatched(x) for x in (channel.messages if channel else [])]
    return m.Dispatched(clientId=clientId, messages=messages)


@router.post(f"{CONSUMER_PATH}/ack", operation_id="ackPermitMessages", response_model=m.PermitAcked)
async def ack_permits(front: Front, group: GroupPath, topic: TopicPath, clientId: ClientPath,  # noqa: N803
                      body: m.PermitAck) -> m.PermitAcked:
    acknowledged = front.broker.ack_permits(group, clientId, topic, encode.positions(body.positions))
    return m.PermitAcked(acknowledged=acknowledged)


@router.post(f"{CONSUMER_PATH}/redeliver", operation_id="redeliverUnacknowledged", response_model=m.Done)
async def redeliver(front: Front, group: GroupPath, topic: TopicPath, clientId: ClientPath,  # noqa: N803
                    body: m.Redeliver) -> m.Done:
    positions = None if body.positions is None else encode.positions(body.positions)
    front.broker.redeliver_unacknowledged(group, clientId, topic, positions)
    return m.Done()


@router.delete(CONSUMER_PATH, operation_id="closePermitConsumer", response_model=m.Done,
               description="The consumer leaves; its unacknowledged messages are redelivered.")
async def close_permit_consumer(front: Front, group: GroupPath, topic: TopicPath,
                                clientId: ClientPath) -> m.Done:  # noqa: N803
    front.broker.close_permit_consumer(group, clientId, topic)
    return m.Done()
