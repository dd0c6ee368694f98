"""What every route of one HTTP front shares: the broker it serves and the channels its clients left on it.

One :class:`FrontState` per application, kept on ``app.state.front`` and handed to a route by the :data:`Front`
dependency. The broker behind it changes at ``POST /admin/restart``, so routes read ``front.broker`` on every
request and never keep it.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from reference.broker.broker import Broker
from reference.broker.host import BrokerHost
from reference.broker.permits.protocol import RecordingPermitChannel
from reference.broker.protocol import PullMessageRequest, PullResponse
from reference.clock import SimClock
from reference.net.http import models as m
from reference.net.http.errors import QueueNotFound
from reference.net.http.held import HeldRequests
from reference.rules.errors import InvalidRequest
from reference.rules.topics import pop_retry_topic
from reference.store.names import MAX_NAME_LENGTH


class ConnectionChannel:
    """A consumer's logical connection: keeps the ids-changed notifications it received, in order."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.notifications: list[str] = []

    def deliver_pull(self, request: PullMessageRequest, response: PullResponse) -> None:  # pragma: no cover
        pass

    def notify_consumer_ids_changed(self, group: str) -> None:
        self.notifications.append(group)


class FrontState:
    """The broker ``host`` runs, as one HTTP front named ``name`` serves it."""

    def __init__(self, host: BrokerHost, name: str) -> None:
        self.host = host
        self.name = name
        self.clock = host.clock
        self.sim = isinstance(host.clock, SimClock)
        self.broker: Broker = host.broker  # type: ignore[assignment]  # None until the lifespan opens it
        self.held = HeldRequests()
        self.connections: dict[str, ConnectionChannel] = {}
        #: Permit consumers' channels by (subscription, client id, topic): what was dispatched to each.
        self.permit_channels: dict[tuple[str, str, str], RecordingPermitChannel] = {}

    def open(self) -> None:
        """Serve the host's broker, opening it if it is not open yet (on the serving loop)."""
        self.broker = self.host.broker if self.host.broker is not None else self.host.open()

    def close(self) -> None:
        """End every held request and close the broker (the application is going away)."""
        self.held.drop_all()
        self.host.close()

    def restart(self) -> None:
        """Restart the broker on its host: held requests end and permit consumers must subscribe again."""
        self.held.drop_all()
        self.permit_channels.clear()
        self.broker = self.host.restart()

    def connection(self, key: str) -> ConnectionChannel:
        return self.connections.setdefault(key, ConnectionChannel(key))

    def check_topic(self, topic: str, queue_id: int | None = None) -> None:
        """Refuse a topic the broker does not have (404), or a queue id the topic does not have (404)."""
        nums = self.broker.store.queue_nums(topic)
        if queue_id is not None and not queue_id < nums:
            raise QueueNotFound(topic, queue_id, nums)

    @staticmethod
    def check_retry_topic(group: str, topic: str) -> None:
        """Both names are valid alone, but the POP retry topic they make may be too long: a conflict
        between two existing names rather than a bad field (so 409, not 400)."""
        name = pop_retry_topic(group, topic)
        if len(name) > MAX_NAME_LENGTH:
            raise InvalidRequest(
                "consumerGroup", f"with topic {topic!r} makes the retry topic {name!r}, longer than "
                f"{MAX_NAME_LENGTH} characters", "RETRY_TOPIC_NAME_TOO_LONG",
            )

    def permit_consumer(self, group: str, topic: str, client_id: str) -> m.PermitConsumer:
        permits = self.broker.permits.consumer(group, client_id, topic).permits
        return m.PermitConsumer(subscription=group, topic=topic, clientId=client_id, permits=permits)


async def front_state(request: Request) -> FrontState:
    """The state of the application serving ``request`` (async, so FastAPI runs it on the loop, not a thread)."""
    state: FrontState = request.app.state.front
    return state


#: A route's parameter for its front's state; a dependency, so it is not part of the OpenAPI document.
Front = Annotated[FrontState, Depends(front_state)]
