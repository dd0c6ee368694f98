"""BrokerGateway: the one interface through which a client talks to the broker.

Theory of operation
-------------------
The client core is sans-I/O: it never opens a socket and never waits. Everything it asks of the
broker goes through a :class:`BrokerGateway`, implemented by

* :class:`reference.client.inprocess.InProcessGateway` over an in-process ``Broker`` (unit tests, the
  conformance target), and the simulator's network (``reference.sim``) through the same class with a
  lossy, reordering :class:`~reference.client.inprocess.Link`;
* later, the network transports (remoting, gRPC), which encode the same calls.

Two kinds of call, as in RocketMQ:

* **asynchronous**: ``pull`` (the long poll; the answer arrives through its callback, maybe much
  later, maybe never — then the callback gets a timeout error after the consumer timeout) and
  ``update_offset`` (RocketMQ sends it oneway: nothing comes back, it may be lost or overtaken);
* **synchronous**: everything else returns its answer or raises :class:`GatewayError`. A simulated
  synchronous call takes no virtual time; what a network can do to it is fail, before or after the
  broker acted (the reply was lost).

Callbacks are never run inside the call that registered them, so a client may call the gateway
from any state without re-entering itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from reference.broker.protocol import ConsumerData, PullMessageRequest, PullResponse, QueryOffsetResult, SendBackResult
from reference.store.message import StoredMessage


class GatewayError(Exception):
    """A call that did not complete: ``code`` is a RocketMQ response code name (``SUBSCRIPTION_NOT_EXIST``)
    or a transport condition (``TIMEOUT``, ``CONNECTION_REFUSED``, ``REPLY_LOST``, ``REQUEST_LOST``)."""

    def __init__(self, code: str, message: str = "") -> None:
        super().__init__(f"{code}: {message}" if message else code)
        self.code = code


#: A pull's completion: exactly one of (response, None) or (None, error).
PullCallback = Callable[[PullResponse | None, GatewayError | None], None]
#: Called by the gateway when the broker says the group's membership changed.
IdsChangedListener = Callable[[str], None]


class BrokerGateway(Protocol):
    broker_name: str

    def pull(self, request: PullMessageRequest, callback: PullCallback, timeout_ms: int) -> None: ...

    def update_offset(self, group: str, topic: str, queue_id: int, offset: int, client_id: str) -> None: ...

    def query_offset(self, group: str, topic: str, queue_id: int) -> QueryOffsetResult: ...

    def heartbeat(self, client_id: str, consumers: list[ConsumerData]) -> None: ...

    def unregister(self, client_id: str, group: str) -> None: ...

    def consumer_ids(self, group: str) -> list[str]: ...

    def send_back(
        self, group: str, message: StoredMessage, delay_level: int, max_reconsume_times: int
    ) -> SendBackResult: ...

    def topic_queue_nums(self, topic: str) -> int | None:
        """The topic's route: its queue count on this broker, or None when the topic does not exist."""
        ...

    def min_offset(self, topic: str, queue_id: int) -> int: ...

    def max_offset(self, topic: str, queue_id: int) -> int: ...

    def search_offset(self, topic: str, queue_id: int, timestamp_ms: int) -> int: ...

    def set_ids_changed_listener(self, listener: IdsChangedListener) -> None: ...

    def close(self) -> None:
        """Graceful end: the connection is closed; pending pulls are abandoned."""
        ...
