"""Telemetry's Settings handshake: the server's view of a client, answered to each settings command.

Why it matters (protocols/rocketmq-grpc-v5.md §3.2): the client acts only on a reply with ``status OK`` and
``settings``; a push consumer's start waits up to 10 s for it and takes its long-polling timeout, batch size and
backoff from it; a producer takes ``max_body_size`` from it and refuses every send when it is 0. The reply is the
client's own settings with what the Java proxy adds (GrpcClientSettingsManager, ProxyConfig defaults), as named
defaults below. A consumer's settings also register its group and subscriptions with the core's registry, as the
proxy's ClientActivity does, so that QueryAssignment finds it before its first heartbeat.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reference.net.grpc.clients import CONSUMER_TYPES, PRODUCER, ClientRegistry, GrpcClient
from reference.net.grpc.convert import FILTER_TAG, duration, resource_name
from reference.rules.errors import InvalidRequest
from reference.rules.filter import SubscriptionData

#: ProxyConfig defaults the reply carries.
PRODUCER_MAX_ATTEMPTS = 3
PRODUCER_BACKOFF_INITIAL_MS, PRODUCER_BACKOFF_MAX_MS, PRODUCER_BACKOFF_MULTIPLIER = 10, 1_000, 2.0
CONSUMER_MAX_ATTEMPTS = 17
#: The consumer's nack delays per attempt (the proxy's customized backoff: 1s 5s 10s 30s 1m ... 2h).
CONSUMER_BACKOFF_MS = (1_000, 5_000, 10_000, 30_000, 60_000, 120_000, 180_000, 240_000, 300_000, 360_000,
                       420_000, 480_000, 540_000, 600_000, 1_200_000, 1_800_000, 3_600_000, 7_200_000)
RECEIVE_BATCH_SIZE = 32
LONG_POLLING_TIMEOUT_MS = 20_000


def subscriptions_of(settings: Any) -> tuple[SubscriptionData, ...]:
    """A consumer's subscriptions; TAG expressions only (the reference filters by tag)."""
    result = []
    for entry in settings.subscription.subscriptions:
        topic = resource_name(entry.topic, "settings.subscription.subscriptions.topic")
        if entry.expression.type not in (0, FILTER_TAG):
            raise InvalidRequest("settings.subscription.subscriptions.expression.type",
                                 "only TAG expressions are supported by the reference", "ILLEGAL_FILTER_EXPRESSION")
        result.append(SubscriptionData.parse(topic, entry.expression.expression or "*"))
    return tuple(result)


def server_settings(definition: Any, settings: Any, max_body_size: int, fifo: bool = False) -> Any:
    """The client's settings with the server's view added; ``fifo`` is the group's consumeMessageOrderly."""
    reply = definition.Settings()
    reply.CopyFrom(settings)
    reply.metric.CopyFrom(definition.Metric(on=False))
    if settings.client_type == PRODUCER:
        reply.publishing.max_body_size = max_body_size
        reply.publishing.validate_message_type = True
        reply.backoff_policy.CopyFrom(definition.RetryPolicy(
            max_attempts=PRODUCER_MAX_ATTEMPTS,
            exponential_backoff=definition.ExponentialBackoff(
                initial=duration(PRODUCER_BACKOFF_INITIAL_MS), max=duration(PRODUCER_BACKOFF_MAX_MS),
                multiplier=PRODUCER_BACKOFF_MULTIPLIER),
        ))
    elif settings.client_type in CONSUMER_TYPES:
        reply.subscription.receive_batch_size = RECEIVE_BATCH_SIZE
        reply.subscription.fifo = fifo
        if not settings.subscription.HasField("long_polling_timeout"):
            reply.subscription.long_polling_timeout.CopyFrom(duration(LONG_POLLING_TIMEOUT_MS))
        reply.backoff_policy.CopyFrom(definition.RetryPolicy(
            max_attempts=CONSUMER_MAX_ATTEMPTS,
            customized_backoff=definition.CustomizedBackoff(next=[duration(ms) for ms in CONSUMER_BACKOFF_MS]),
        ))
    return reply


def answer_settings(definition: Any, registry: ClientRegistry, client: GrpcClient, settings: Any,
                    max_body_size: int, fifo: Callable[[str], bool] = lambda group: False) -> Any:
    """Register what the settings say about the client and return the server's view of them."""
    group = ""
    if settings.client_type in CONSUMER_TYPES:
        client.subscriptions = subscriptions_of(settings)
        group = resource_name(settings.subscription.group, "settings.subscription.group")
    registry.register(client, group, settings.client_type)
    client.settings = server_settings(definition, settings, max_body_size, bool(group) and fifo(group))
    return client.settings
