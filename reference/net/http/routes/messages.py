"""Topics, sending, pulling and the consumer offsets a pull consumer commits: the pull half of consumption.

A pull that finds nothing with a suspend timeout is held by the broker (long polling): see
:mod:`reference.net.http.held`.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from reference.broker.permits.batch import encode_batch
from reference.broker.protocol import PullMessageRequest, PullSysFlag
from reference.net.http import models as m
from reference.net.http.encode import pull_result
from reference.net.http.errors import ERRORS
from reference.net.http.held import answer_or_hold
from reference.net.http.routes.params import GroupPath, QueuePath, TopicPath
from reference.net.http.state import Front
from reference.store.message import Message

router = APIRouter(responses=ERRORS)


@router.post(
    "/topics", operation_id="createTopic", status_code=201, response_model=m.TopicCreated, tags=["admin"],
    openapi_extra={"responses": {"201": {"links": {
        "SendToQueue0": {"operationId": "sendMessage", "parameters": {"topic": "$response.body#/topic", "queueId": 0}},
        "QueueOffsets": {"operationId": "queueOffsets",
                         "parameters": {"topic": "$response.body#/topic", "queueId": 0}},
        "SubscribePermits": {"operationId": "subscribePermits", "parameters": {"topic": "$response.body#/topic"}},
    }}}},
)
async def create_topic(front: Front, body: m.CreateTopic) -> m.TopicCreated:
    front.broker.create_topic(body.topic, body.queues)
    return m.TopicCreated(topic=body.topic, queues=front.broker.store.queue_nums(body.topic))


@router.get("/topics/{topic}/queues/{queueId}/offsets", operation_id="queueOffsets", response_model=m.QueueOffsets,
            tags=["messages"])
async def queue_offsets(front: Front, topic: TopicPath, queueId: QueuePath) -> m.QueueOffsets:  # noqa: N803
    front.check_topic(topic, queueId)
    store = front.broker.store
    return m.QueueOffsets(
        topic=topic, queueId=queueId, minOffset=store.get_min_offset_in_queue(topic, queueId),
        maxOffset=store.get_max_offset_in_queue(topic, queueId),
    )


@router.post(
    "/topics/{topic}/queues/{queueId}/messages", operation_id="sendMessage", status_code=201,
    response_model=m.SendReceipt, tags=["messages"],
    openapi_extra={"responses": {"201": {"links": {
        "PullIt": {"operationId": "pullMessages",
                   "parameters": {"topic": "$response.body#/topic", "queueId": "$response.body#/queueId"}},
        "QueueOffsets": {"operationId": "queueOffsets",
                         "parameters": {"topic": "$response.body#/topic", "queueId": "$response.body#/queueId"}},
        "PopIt": {"operationId": "popMessages", "parameters": {"topic": "$response.body#/topic"}},
    }}}},
)
async def send(front: Front, topic: TopicPath, queueId: QueuePath, body: m.SendBody) -> m.SendReceipt:  # noqa: N803
    front.check_topic(topic, queueId)
    r = front.broker.send(Message(topic, body.body.encode("utf-8"), queueId, tags=body.tags))
    return m.SendReceipt(topic=topic, queueId=r.queue_id, queueOffset=r.queue_offset, msgId=r.unique_id,
                         commitLogOffset=r.commit_log_offset)


@router.post("/topics/{topic}/queues/{queueId}/batches", operation_id="sendBatch", status_code=201,
             response_model=m.SendReceipt, tags=["messages"],
             description="One batch entry holding several messages (a Pulsar producer's batch): stored as one "
                         "entry, dispatched and counted message by message by the permit dispatchers.")
async def send_batch(front: Front, topic: TopicPath, queueId: QueuePath,  # noqa: N803
                     body: m.SendBatchBody) -> m.SendReceipt:
    front.check_topic(topic, queueId)
    payload, properties = encode_batch([b.encode("utf-8") for b in body.bodies])
    r = front.broker.send(Message(topic, payload, queueId, properties=properties))
    return m.SendReceipt(topic=topic, queueId=r.queue_id, queueOffset=r.queue_offset, msgId=r.unique_id,
                         commitLogOffset=r.commit_log_offset)


@router.post("/topics/{topic}/queues/{queueId}/pull", operation_id="pullMessages", response_model=m.PullResult,
             tags=["messages"],
             description="With `suspendTimeoutMs` and nothing to read, the broker holds the pull (long polling): "
                         "the status line comes at once, the body when a matching message arrives or the hold "
                         "time ends.")
async def pull(front: Front, topic: TopicPath, queueId: QueuePath, body: m.PullBody) -> Any:  # noqa: N803
    front.check_topic(topic, queueId)
    flag = PullSysFlag.of(
        suspend_ms=body.suspendTimeoutMs, subscription=body.subscription, commit_offset=body.commitOffset
    )
    request = PullMessageRequest(
        body.consumerGroup, topic, queueId, body.queueOffset, max_msg_nums=body.maxMsgNums, sys_flag=int(flag),
        commit_offset=body.commitOffset or 0, suspend_timeout_ms=body.suspendTimeoutMs,
        subscription=body.subscription, client_id=body.clientId or "",
    )
    broker, held = front.broker, front.held
    return answer_or_hold(held, request, lambda: broker.pull(request, held), pull_result)


@router.get("/groups/{group}/offsets/{topic}/{queueId}", operation_id="queryConsumerOffset",
            response_model=m.ConsumerOffset, tags=["offsets"])
async def query_offset(front: Front, group: GroupPath, topic: TopicPath,
                       queueId: QueuePath) -> m.ConsumerOffset:  # noqa: N803
    front.check_topic(topic, queueId)
    r = front.broker.query_consumer_offset(group, topic, queueId)
    return m.ConsumerOffset(code=r.code.name, offset=r.offset)  # type: ignore[arg-type]  # the query's only two codes


@router.put("/groups/{group}/offsets/{topic}/{queueId}", operation_id="updateConsumerOffset", response_model=m.Done,
            tags=["offsets"])
async def commit_offset(front: Front, group: GroupPath, topic: TopicPath, queueId: QueuePath,  # noqa: N803
                        body: m.CommitOffset) -> m.Done:
    front.check_topic(topic, queueId)
    front.broker.update_consumer_offset(group, topic, queueId, body.offset, body.clientId or "")
    return m.Done()
