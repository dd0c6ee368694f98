"""SimpleConsumer: the application pops, acks and changes invisible time itself (RocketMQ 5's
SimpleConsumer; rocketmq-grpc-v5 §3.6-§3.8).

``receive(max, invisible_duration)`` pops up to ``max`` messages of the topic from any queue (queue
id -1, as the proxy does) and makes them invisible for ``invisible_duration``; the application then
``ack``s each, or ``change_invisible_duration``s it, which returns the message with its new receipt
handle (the old one is no longer valid). ``receive_async`` does the same with long polling.
"""

from __future__ import annotations

import contextlib
import dataclasses

from reference.broker.pop.protocol import ALL_QUEUES, PopMessageRequest, PoppedMessage
from reference.broker.protocol import ConsumerData
from reference.client.pop.connection import BrokerHost, ClientError, PopCallback, PopConnection
from reference.clock import Clock
from reference.rules.filter import SubscriptionData

#: Client-side slack over a pop's poll time before it counts as lost (the gRPC request timeout, 3 s).
REQUEST_TIMEOUT_MS = 3_000


class SimpleConsumer:
    def __init__(
        self, host: BrokerHost, clock: Clock, group: str, topic: str, client_id: str, expression: str = "*"
    ) -> None:
        self.group = group
        self.topic = topic
        self.client_id = client_id
        self.expression = expression
        self.clock = clock
        self.connection = PopConnection(host, clock, client_id)

    def start(self) -> None:
        """Register with the broker (a heartbeat)."""
        sub = SubscriptionData.parse(self.topic, self.expression)
        self.connection.call(
            "heartbeat", self.connection, self.client_id,
            [ConsumerData(self.group, (sub,), "CLUSTERING", "CONSUME_POP")],
        )

    def _request(self, max_nums: int, invisible_duration_ms: int, poll_ms: int) -> PopMessageRequest:
        return PopMessageRequest(
            self.group, self.topic, ALL_QUEUES, max_nums, invisible_duration_ms, poll_ms, self.expression,
            self.client_id,
        )

    def receive(self, max_nums: int, invisible_duration_ms: int) -> list[PoppedMessage]:
        """Pop without waiting: the messages there are now (possibly none)."""
        response = self.connection.call("pop", self._request(max_nums, invisible_duration_ms, 0), self.connection)
        assert response is not None, "a pop with poll time 0 is answered at once"
        return list(response.messages)

    def receive_async(
        self,
        max_nums: int,
        invisible_duration_ms: int,
        await_duration_ms: int,
        callback: PopCallback,
    ) -> None:
        """Pop, waiting up to ``await_duration_ms`` for a message; ``callback`` gets the answer."""
        self.connection.pop(self._request(max_nums, invisible_duration_ms, await_duration_ms), callback,
                            REQUEST_TIMEOUT_MS)

    def ack(self, message: PoppedMessage) -> None:
        self.connection.call("ack", self.group, self.topic, message.handle, self.client_id)

    def change_invisible_duration(self, message: PoppedMessage, invisible_duration_ms: int) -> PoppedMessage:
        """Make ``message`` visible again ``invisible_duration_ms`` from now; returns it with its new
        receipt handle."""
        result = self.connection.call(
            "change_invisible_time", self.group, self.topic, message.handle, invisible_duration_ms, self.client_id
        )
        return dataclasses.replace(message, handle=result.handle)

    def close(self) -> None:
        with contextlib.suppress(ClientError):
            self.connection.call("unregister_client", self.connection, self.group)
        self.connection.close()

