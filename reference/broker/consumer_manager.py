"""ConsumerManager: who is in a consumer group, and when the group changed (seed 001 §2.2, §6).

Theory of operation
-------------------
Consumers register by heartbeat. A registration *changes* the group exactly when (seed 001 §6.2):

* its channel was not in the group before (a new connection), or
* its subscription set gained a topic, or lost one.

And it does *not* change the group when the channel is known but now reports another client id
(the table is updated, nothing is announced), nor when a topic's subscription only gets a newer
``subVersion`` (the subscription is replaced, nothing is announced).

A change, an unregister, a closed channel and an expired channel (no heartbeat for
``channel_expired_timeout_ms``, default 120 s) each send NOTIFY_CONSUMER_IDS_CHANGED to every
channel still in the group, so that its members rebalance now rather than at their next 20 s
round. The notification is only a hint to rebalance; clients also rebalance periodically.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from reference.broker.config import BrokerConfig
from reference.broker.protocol import Channel, ConsumerData
from reference.clock import Clock
from reference.periodic import PeriodicTask
from reference.rules.filter import SubscriptionData


@dataclass
class ClientChannelInfo:
    channel: Channel
    client_id: str
    language: str = "PYTHON"
    version: int = 0
    last_update_timestamp: int = 0


@dataclass
class ConsumerGroupInfo:
    group_name: str
    consume_type: str
    message_model: str
    consume_from_where: str
    channel_info_table: dict[str, ClientChannelInfo] = field(default_factory=dict)
    subscription_table: dict[str, SubscriptionData] = field(default_factory=dict)
    last_update_timestamp: int = 0

    def update_channel(self, info: ClientChannelInfo, data: ConsumerData, now: int) -> bool:
        """True only when the channel is new to the group (seed 001 §6.2.1)."""
        self.consume_type = data.consume_type
        self.message_model = data.message_model
        self.consume_from_where = data.consume_from_where
        updated = False
        old = self.channel_info_table.get(info.channel.key)
        if old is None:
            self.channel_info_table[info.channel.key] = info
            old = info
            updated = True
        elif old.client_id != info.client_id:
            # Same connection, another client id: replace, but this is not a group change.
            self.channel_info_table[info.channel.key] = info
            old = info
        self.last_update_timestamp = now
        old.last_update_timestamp = now
        return updated

    def update_subscription(self, subs: Iterable[SubscriptionData], now: int) -> bool:
        """True when a topic was added or removed; a newer subVersion replaces silently (§6.2.2)."""
        subs = list(subs)
        updated = False
        for sub in subs:
            old = self.subscription_table.get(sub.topic)
            if old is None:
                self.subscription_table[sub.topic] = sub
                updated = True
            elif sub.sub_version > old.sub_version:
                self.subscription_table[sub.topic] = sub
        wanted = {s.topic for s in subs}
        for topic in [t for t in self.subscription_table if t not in wanted]:
            del self.subscription_table[topic]
            updated = True
        self.last_update_timestamp = now
        return updated

    def all_channels(self) -> list[Channel]:
        return [info.channel for info in self.channel_info_table.values()]

    def all_client_ids(self) -> list[str]:
        return [info.client_id for info in self.channel_info_table.values()]


#: Called with (event, group, client_id, subscriptions) for the trace: SUBSCRIBE / UNSUBSCRIBE.
RegistryListener = Callable[[str, str, str, tuple[SubscriptionData, ...], str], None]


class ConsumerManager:
    def __init__(self, config: BrokerConfig, clock: Clock, listener: RegistryListener | None = None) -> None:
        self.config = config
        self.clock = clock
        self.consumer_table: dict[str, ConsumerGroupInfo] = {}
        self._listener = listener
        interval = config.channel_scan_interval_ms
        self._scanner = PeriodicTask(clock, interval, interval, self.scan_not_active_channel)

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        self._scanner.start()

    def shutdown(self) -> None:
        self._scanner.cancel()

    # -- registry ------------------------------------------------------------------------------
    def get_consumer_group_info(self, group: str) -> ConsumerGroupInfo | None:
        return self.consumer_table.get(group)

    def find_subscription_data(self, group: str, topic: str) -> SubscriptionData | None:
        info = self.consumer_table.get(group)
        return info.subscription_table.get(topic) if info else None

    def consumer_ids(self, group: str) -> list[str]:
        """Client ids of the group's live channels, sorted (clients sort again before allocating)."""
        info = self.consumer_table.get(group)
        return sorted(set(info.all_client_ids())) if info else []

    def register_consumer(self, info: ClientChannelInfo, data: ConsumerData) -> bool:
        """Heartbeat registration; returns whether the group changed (and notifies if so)."""
        data.validate()
        now = self.clock.now_ms()
        info.last_update_timestamp = now
        group = self.consumer_table.get(data.group)
        if group is None:
            group = ConsumerGroupInfo(data.group, data.consume_type, data.message_model, data.consume_from_where)
            self.consumer_table[data.group] = group
        known_before = info.channel.key in group.channel_info_table
        before = dict(group.subscription_table)
        r1 = group.update_channel(info, data, now)
        r2 = group.update_subscription(data.subscriptions, now)
        if self._listener is not None:
            added = tuple(
                s for s in data.subscriptions
                if not known_before or s.topic not in before or before[s.topic] != s
            )
            if added:
                self._listener("SUBSCRIBE", data.group, info.client_id, added, data.message_model)
        if (r1 or r2) and self.config.notify_consumer_ids_changed_enable:
            self._notify_change(group)
        return r1 or r2

    def unregister_consumer(self, group_name: str, channel: Channel) -> bool:
        """Remove a channel from a group (UNREGISTER_CLIENT); notifies the rest. False if unknown."""
        group = self.consumer_table.get(group_name)
        if group is None:
            return False
        return self._remove_channel(group, channel.key)

    def do_channel_close_event(self, channel: Channel) -> list[str]:
        """A connection closed: remove it from every group; returns the groups it left."""
        left = []
        for group in list(self.consumer_table.values()):
            if channel.key in group.channel_info_table and self._remove_channel(group, channel.key):
                left.append(group.group_name)
        return left

    def scan_not_active_channel(self) -> list[tuple[str, str]]:
        """Expire channels silent for longer than the timeout; returns (group, client_id) removed."""
        now = self.clock.now_ms()
        removed = []
        for group in list(self.consumer_table.values()):
            for key, info in list(group.channel_info_table.items()):
                if now - info.last_update_timestamp > self.config.channel_expired_timeout_ms:
                    self._remove_channel(group, key)
                    removed.append((group.group_name, info.client_id))
        return removed

    def _remove_channel(self, group: ConsumerGroupInfo, key: str) -> bool:
        info = group.channel_info_table.pop(key, None)
        if info is None:
            return False
        if self._listener is not None:
            self._listener("UNSUBSCRIBE", group.group_name, info.client_id, (), group.message_model)
        if not group.channel_info_table:
            self.consumer_table.pop(group.group_name, None)
        if self.config.notify_consumer_ids_changed_enable:
            self._notify_change(group)
        return True

    def _notify_change(self, group: ConsumerGroupInfo) -> None:
        for channel in group.all_channels():
            channel.notify_consumer_ids_changed(group.group_name)
