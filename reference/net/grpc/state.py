"""What every handler of the gRPC front shares: the broker (through its host, so a restart is followed), the
front's own address, the stubs, the client registry, and the producer's queue choice."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any, Protocol

from reference.broker.broker import Broker
from reference.broker.host import BrokerHost
from reference.net.grpc.clients import ClientRegistry
from reference.net.grpc.limits import ReceiveLimits
from reference.net.grpc.protos import Stubs
from reference.net.grpc.renewal import ReceiptHandleManager


class Held(Protocol):
    """A receive the core holds (``reference.net.grpc.receive.HeldReceive``)."""

    def end_empty(self, now_ms: int) -> None: ...


@dataclass
class FrontState:
    host: BrokerHost
    #: The address clients reach this front at: every route's and assignment's endpoints.
    address: tuple[str, int]
    stubs: Stubs
    #: Queues of a topic created by a route lookup (the remoting name server's autoCreateTopicEnable figure).
    queue_nums: int
    #: What a receive may ask and how long it is held (the proxy's settings; its defaults unless configured).
    limits: ReceiveLimits = field(default_factory=ReceiveLimits)
    registry: ClientRegistry = field(init=False)
    #: The auto-renew receives' handles, renewed while their client lives (the proxy's receipt handle manager).
    renewals: ReceiptHandleManager = field(init=False)
    #: Held receives answered after their call was made (woken by an arrival or their deadline) so far.
    late_answers: int = 0
    #: Receives the core holds now (ended when the broker is replaced: the new one does not know them).
    held: set[Held] = field(default_factory=set)
    _next_queue: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.registry = ClientRegistry(lambda: self.broker)
        self.renewals = ReceiptHandleManager(self.host.clock, lambda: self.broker)
        self.registry.on_leave = self.renewals.clear_client
        self.registry.on_group_change = self.renewals.check_group

    @property
    def broker(self) -> Broker:
        broker = self.host.broker
        assert broker is not None, "the broker is only ever down inside a restart, which runs in one loop turn"
        return broker

    @property
    def definition(self) -> Any:
        return self.stubs.definition

    @property
    def service(self) -> Any:
        return self.stubs.service

    @property
    def store_host(self) -> str:
        return f"{self.address[0]}:{self.address[1]}"

    def send_queue(self, topic: str, queue_nums: int, message_group: str | None) -> int:
        """The queue a send goes to, as the proxy chooses: a FIFO message's by its group's hash (all of a group in
        one queue, in order), any other round-robin."""
        if message_group is not None:
            return zlib.crc32(message_group.encode()) % queue_nums
        index = self._next_queue.get(topic, 0)
        self._next_queue[topic] = index + 1
        return index % queue_nums
