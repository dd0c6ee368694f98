"""Route and membership RPCs: QueryRoute, QueryAssignment, Heartbeat, NotifyClientTermination.

Each is one call on the core: the route is the topic's queues on this broker, with this front as every queue's
endpoints (the client sends everything but QueryRoute to the route's endpoints, protocols/rocketmq-grpc-v5.md
§1); the assignment is the core's broker-side POP assignment (seed 004 §3.1), which for a POP group with no
popShareQueueNum gives each client every queue as id -1, the answer the proxy gives a non-FIFO group.
"""

from __future__ import annotations

from typing import Any

from reference.broker.send_back import RETRY_QUEUE_NUMS
from reference.net.grpc import fifo
from reference.net.grpc.clients import PUSH_CONSUMER
from reference.net.grpc.codes import OK, status
from reference.net.grpc.convert import message_queue, resource_name
from reference.net.grpc.state import FrontState
from reference.rules.topics import is_retry_topic
from reference.store.names import check_name


def query_route(state: FrontState, request: Any, client_id: str) -> Any:
    topic = resource_name(request.topic, "topic")
    check_name(topic, "topic")
    broker = state.broker
    topics = broker.store.topics()
    if topic not in topics:  # auto-created, as the remoting name server does (autoCreateTopicEnable)
        broker.create_topic(topic, RETRY_QUEUE_NUMS if is_retry_topic(topic) else state.queue_nums)
        topics = broker.store.topics()
    d = state.definition
    queues = [message_queue(d, topic, q, broker.config.broker_name, state.address) for q in range(topics[topic])]
    return state.service.QueryRouteResponse(status=status(d, OK), message_queues=queues)


def query_assignment(state: FrontState, request: Any, client_id: str) -> Any:
    topic = resource_name(request.topic, "topic")
    group = resource_name(request.group, "group")
    broker = state.broker
    client = state.registry.client(client_id)
    if group not in client.groups:  # asked before its settings or heartbeat registered it
        state.registry.register(client, group, client.client_type or PUSH_CONSUMER)
    # A FIFO group gets every queue by its id, as the proxy's RouteActivity answers it (reference.net.grpc.fifo).
    queues = fifo.assignment(state, topic) if fifo.is_fifo(state, group) else broker.query_assignment(
        topic, group, client_id)
    d = state.definition
    assignments = [d.Assignment(message_queue=message_queue(d, q.topic, q.queue_id, q.broker_name, state.address))
                   for q in queues]
    return state.service.QueryAssignmentResponse(status=status(d, OK), assignments=assignments)


def heartbeat(state: FrontState, request: Any, client_id: str) -> Any:
    client = state.registry.client(client_id)
    group = str(request.group.name) if request.HasField("group") else ""
    state.registry.register(client, group, int(request.client_type) or client.client_type)
    return state.service.HeartbeatResponse(status=status(state.definition, OK))


def notify_client_termination(state: FrontState, request: Any, client_id: str) -> Any:
    group = str(request.group.name) if request.HasField("group") else ""
    if group:
        check_name(group, "group")
    state.registry.terminate(client_id, group)
    return state.service.NotifyClientTerminationResponse(status=status(state.definition, OK))

