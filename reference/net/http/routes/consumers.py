"""The consumer registry a client-side rebalance reads: heartbeats, the group's consumer ids, the ids-changed
notifications each connection received, and the allocation strategies served for checking."""

from __future__ import annotations

from fastapi import APIRouter

from reference.allocation.message_queue import MessageQueue
from reference.allocation.registry import strategy_class
from reference.broker.protocol import ConsumerData
from reference.net.http import models as m
from reference.net.http.errors import ERRORS
from reference.net.http.routes.params import ConnPath, GroupPath
from reference.net.http.state import Front
from reference.rules.filter import SubscriptionData

router = APIRouter(responses=ERRORS, tags=["consumers"])


@router.post("/consumers/heartbeat", operation_id="heartbeat", response_model=m.HeartbeatResult)
async def heartbeat(front: Front, body: m.Heartbeat) -> m.HeartbeatResult:
    consumers = [
        ConsumerData(
            group,
            tuple(
                SubscriptionData.parse(topic, s.expression, s.subVersion)
                for topic, s in sorted(g.subscriptions.items())
            ),
            g.messageModel,
        )
        for group, g in sorted(body.consumers.items())
    ]
    changed = front.broker.heartbeat(front.connection(body.connection), body.clientId, consumers)
    return m.HeartbeatResult(changed=changed)


@router.post("/consumers/unregister", operation_id="unregister", response_model=m.Done)
async def unregister(front: Front, body: m.Unregister) -> m.Done:
    front.broker.unregister_client(front.connection(body.connection), body.consumerGroup)
    return m.Done()


@router.get("/groups/{group}/consumers", operation_id="consumerList", response_model=m.ConsumerList)
async def consumer_list(front: Front, group: GroupPath) -> m.ConsumerList:
    return m.ConsumerList(consumerGroup=group, clientIds=front.broker.consumer_ids(group))


@router.get("/connections/{connection}/notifications", operation_id="notifications", response_model=m.Notifications)
async def notifications(front: Front, connection: ConnPath) -> m.Notifications:
    channel = front.connections.get(connection)
    return m.Notifications(connection=connection, groups=list(channel.notifications) if channel else [])


@router.post("/allocation", operation_id="allocate", response_model=m.Allocation)
async def allocate(body: m.Allocate) -> m.Allocation:
    """The share of ``currentCID`` under a named strategy (the client-side rebalance's rule, served so
    that a broker-side implementation, e.g. for POP, can be checked the same way). As in RocketMQ, a
    currentCID that is not in cidAll gets an empty share, not an error."""
    queues = [MessageQueue(q.topic, q.brokerName, q.queueId) for q in body.mqAll]
    share = strategy_class(body.strategy)().allocate(body.consumerGroup, body.currentCID, queues, body.cidAll)
    return m.Allocation(result=[m.QueueRef(topic=q.topic, brokerName=q.broker_name, queueId=q.queue_id)
                                for q in share])
