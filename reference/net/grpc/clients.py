"""The v5 clients the front knows, keyed by their ``x-mq-client-id`` metadata (protocols/rocketmq-grpc-v5.md §1.1).

A v5 client has no connection the broker could key it by: every call names its client id in the metadata, and
Settings (Telemetry), Heartbeat and NotifyClientTermination are per client id. So the front keeps one
:class:`GrpcClient` per id: its channel as the core's consumer registry sees it (a v5 consumer never pulls and is
never told of ids changing: it asks QueryAssignment again every 5 s), its type, and the settings it sent, whose
subscriptions a heartbeat registers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from reference.broker.broker import Broker
from reference.broker.protocol import ConsumerData
from reference.rules.errors import InvalidRequest
from reference.rules.filter import SubscriptionData

#: The metadata header naming the client instance.
CLIENT_ID_HEADER = "x-mq-client-id"
#: v5 ClientType numbers (definition.proto) that consume: push, simple (and their lite variants).
CONSUMER_TYPES = frozenset({2, 3, 5, 6})
PRODUCER = 1
#: v5 ClientType.PUSH_CONSUMER: the only client that asks QueryAssignment.
PUSH_CONSUMER = 2
#: ClientType numbers a client may declare (UNSPECIFIED 0 is not one).
KNOWN_TYPES = frozenset({1, 2, 3, 4, 5, 6})
#: A v5 consumer's registry entry: CONSUME_PASSIVELY, as the proxy registers its push and simple consumers.
CONSUME_TYPE = "CONSUME_PASSIVELY"


def channel_key(client_id: str) -> str:
    """The key a v5 client's channel has in the core's consumer registry."""
    return f"grpc:{client_id}"


def client_id_of(metadata: Any) -> str:
    """The ``x-mq-client-id`` of a call's invocation metadata; CLIENT_ID_REQUIRED when absent or empty."""
    for key, value in metadata or ():
        if key == CLIENT_ID_HEADER and value:
            return str(value)
    raise InvalidRequest(CLIENT_ID_HEADER, "the metadata must carry the client id", "CLIENT_ID_REQUIRED")


@dataclass(eq=False)
class GrpcClient:
    """One v5 client instance: the core's :class:`~reference.broker.protocol.Channel` for it."""

    client_id: str
    key: str = ""
    client_type: int = 0
    group: str = ""
    subscriptions: tuple[SubscriptionData, ...] = ()
    #: The settings the server answered with last (the server's view of this client).
    settings: Any = None
    groups: set[str] = field(default_factory=set)
    #: Told when a group of this client lost or gained a member (the registry's consumer-ids-changed).
    group_changed: Callable[[str], None] = field(default=lambda group: None, repr=False)

    def __post_init__(self) -> None:
        self.key = self.key or channel_key(self.client_id)

    def deliver_pull(self, request: object, response: object) -> None:
        """Never called: a v5 client does not pull through this front."""

    def notify_consumer_ids_changed(self, group: str) -> None:
        """v5 has no such notification (a push consumer asks QueryAssignment again every 5 s); the front uses it to
        learn at once that a member left, as the proxy's CLIENT_UNREGISTER listener does."""
        self.group_changed(group)


class ClientRegistry:
    """Every v5 client by id, and their registration with the core's consumer registry."""

    def __init__(self, broker: Callable[[], Broker]) -> None:
        self._broker = broker
        self.clients: dict[str, GrpcClient] = {}
        #: Told of every client that leaves (the front's receipt handle manager gives back what it held).
        self.on_leave: Callable[[str], None] = lambda client_id: None
        #: Told of every group whose members changed (a member may have expired).
        self.on_group_change: Callable[[str], None] = lambda group: None

    def client(self, client_id: str) -> GrpcClient:
        found = self.clients.get(client_id)
        if found is None:
            found = self.clients[client_id] = GrpcClient(client_id, group_changed=lambda g: self.on_group_change(g))
        return found

    def register(self, client: GrpcClient, group: str, client_type: int) -> None:
        """A consumer's heartbeat or settings: (re)register its group with the core, with its subscriptions."""
        if client_type not in KNOWN_TYPES:
            raise InvalidRequest("client_type", f"must be a known ClientType, got {client_type}",
                                 "UNRECOGNIZED_CLIENT_TYPE")
        client.client_type = client_type
        if client_type not in CONSUMER_TYPES:
            return
        if not group:
            raise InvalidRequest("group", "a consumer must name its group", "ILLEGAL_CONSUMER_GROUP")
        client.group = group
        client.groups.add(group)
        self._broker().heartbeat(client, client.client_id,
                                 [ConsumerData(group, client.subscriptions, consume_type=CONSUME_TYPE)])

    def terminate(self, client_id: str, group: str) -> None:
        """NotifyClientTermination: the client leaves its groups and is forgotten."""
        client = self.clients.pop(client_id, None)
        self.on_leave(client_id)
        if client is None:
            return
        broker = self._broker()
        for name in sorted(client.groups | ({group} if group else set())):
            if name in client.groups:
                broker.unregister_client(client, name)
        broker.channel_closed(client)
