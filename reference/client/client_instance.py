"""MQClientInstance: one client process's shared services (seed 001 §2, §6).

It owns what its consumers share: the PullMessageService, the RebalanceService (every 20 s, and at
once when a consumer starts or the broker notifies a membership change), the heartbeat (every 30 s;
it is also what registers the consumers with the broker) and the offset persistence (every 5 s,
after 10 s). Consumers register here by group.
"""

from __future__ import annotations

import contextlib
from typing import Protocol

from reference.broker.protocol import ConsumerData
from reference.client.config import ClientConfig
from reference.client.gateway import BrokerGateway, GatewayError
from reference.client.pull_request import PullRequest
from reference.client.pull_service import PullMessageService
from reference.client.rebalance_service import RebalanceService
from reference.clock import Clock
from reference.periodic import PeriodicTask
from reference.trace import NULL_TRACE, Trace


class ConsumerInner(Protocol):
    """RocketMQ's MQConsumerInner: what the instance asks of each of its consumers."""

    def consumer_data(self) -> ConsumerData: ...

    def do_rebalance(self) -> None: ...

    def persist_consumer_offset(self) -> None: ...

    def pull_message(self, pull_request: PullRequest) -> None: ...


class MQClientInstance:
    def __init__(
        self, client_id: str, gateway: BrokerGateway, clock: Clock, config: ClientConfig | None = None,
        trace: Trace | None = None,
    ) -> None:
        self.client_id = client_id
        self.gateway = gateway
        self.clock = clock
        self.config = config or ClientConfig()
        self.rec = (trace or NULL_TRACE).source(f"client:{client_id}", clock)
        self.pull_message_service = PullMessageService(clock, self._pull)
        self.rebalance_service = RebalanceService(clock, self.config.rebalance_interval_ms, self.do_rebalance)
        interval = self.config.heartbeat_broker_interval_ms
        self._heartbeat = PeriodicTask(clock, interval, interval, self.send_heartbeat_to_all_broker)
        self._persist = PeriodicTask(
            clock, self.config.persist_consumer_offset_initial_delay_ms,
            self.config.persist_consumer_offset_interval_ms, self.persist_all_consumer_offset,
        )
        self.consumer_table: dict[str, ConsumerInner] = {}
        self.running = False
        gateway.set_ids_changed_listener(self._on_consumer_ids_changed)

    def register_consumer(self, group: str, consumer: ConsumerInner) -> bool:
        if group in self.consumer_table:
            return False
        self.consumer_table[group] = consumer
        return True

    def start(self) -> None:
        if self.running:
            return
        self.running = True
        self.rebalance_service.start()
        self._heartbeat.start()
        self._persist.start()

    def _pull(self, pull_request: PullRequest) -> None:
        consumer = self.consumer_table.get(pull_request.consumer_group)
        if consumer is not None:
            consumer.pull_message(pull_request)

    def send_heartbeat_to_all_broker(self) -> None:
        data = [consumer.consumer_data() for consumer in self.consumer_table.values()]
        if not data:
            return
        with contextlib.suppress(GatewayError):  # the next heartbeat tries again
            self.gateway.heartbeat(self.client_id, data)

    def do_rebalance(self) -> None:
        for consumer in list(self.consumer_table.values()):
            consumer.do_rebalance()

    def rebalance_immediately(self) -> None:
        self.rebalance_service.wakeup()

    def persist_all_consumer_offset(self) -> None:
        for consumer in list(self.consumer_table.values()):
            consumer.persist_consumer_offset()

    def _on_consumer_ids_changed(self, group: str) -> None:
        """NOTIFY_CONSUMER_IDS_CHANGED (seed 001 §6.2.4): rebalance now."""
        self.rebalance_immediately()

    def unregister_consumer(self, group: str) -> None:
        self.consumer_table.pop(group, None)
        with contextlib.suppress(GatewayError):  # the broker expires the channel instead
            self.gateway.unregister(self.client_id, group)

    def shutdown(self) -> None:
        """Stop every service and close the connection (after the consumers shut down)."""
        if not self.running:
            return
        self.running = False
        self.pull_message_service.shutdown()
        self.rebalance_service.shutdown()
        self._heartbeat.cancel()
        self._persist.cancel()
        self.gateway.close()
