"""The faulty component classes behind the mutant catalogue. Each overrides one method."""

from __future__ import annotations

from collections.abc import Iterable

from reference.broker.consumer_manager import ConsumerGroupInfo, ConsumerManager
from reference.broker.hold_service import PullRequestHoldService
from reference.broker.protocol import Channel
from reference.broker.pull_processor import HeldPullRequest
from reference.store.filter import SubscriptionData


class HoldWithoutRecheck(PullRequestHoldService):
    def suspend_pull_request(self, held: HeldPullRequest) -> None:
        self._table.setdefault((held.request.topic, held.request.queue_id), []).append(held)


class HoldWakesOnAnyArrival(PullRequestHoldService):
    def on_message_arriving(
        self, topic: str, queue_id: int, max_offset: int, tags_code: int | None, store_timestamp: int
    ) -> None:
        for held in self._table.pop((topic, queue_id), []):
            self._wake(held)


class HoldIgnoresDeadline(PullRequestHoldService):
    def check_hold_requests(self) -> None:
        for (topic, queue_id), requests in list(self._table.items()):
            newest = self.store.get_max_offset_in_queue(topic, queue_id)
            for held in list(requests):
                if newest > held.pull_from_this_offset and self._has_match(held, newest):
                    requests.remove(held)
                    self._wake(held)


class _SubVersionGroup(ConsumerGroupInfo):
    def update_subscription(self, subs: Iterable[SubscriptionData], now: int) -> bool:
        subs = list(subs)
        bumped = any(
            s.topic in self.subscription_table and s.sub_version > self.subscription_table[s.topic].sub_version
            for s in subs
        )
        return super().update_subscription(subs, now) or bumped


class _NoRemovalGroup(ConsumerGroupInfo):
    def update_subscription(self, subs: Iterable[SubscriptionData], now: int) -> bool:
        subs = list(subs)
        added = False
        for sub in subs:
            old = self.subscription_table.get(sub.topic)
            if old is None:
                self.subscription_table[sub.topic] = sub
                added = True
            elif sub.sub_version > old.sub_version:
                self.subscription_table[sub.topic] = sub
        return added


class _GroupClassManager(ConsumerManager):
    group_class: type[ConsumerGroupInfo] = ConsumerGroupInfo

    def register_consumer(self, info, data):  # type: ignore[no-untyped-def]
        if data.group not in self.consumer_table:
            self.consumer_table[data.group] = self.group_class(
                data.group, data.consume_type, data.message_model, data.consume_from_where
            )
        return super().register_consumer(info, data)


class SubVersionIsChange(_GroupClassManager):
    group_class = _SubVersionGroup


class IgnoresTopicRemoval(_GroupClassManager):
    group_class = _NoRemovalGroup


class NoNotifyOnUnregister(ConsumerManager):
    def unregister_consumer(self, group_name: str, channel: Channel) -> bool:
        group = self.consumer_table.get(group_name)
        if group is None or group.channel_info_table.pop(channel.key, None) is None:
            return False
        if not group.channel_info_table:
            self.consumer_table.pop(group_name, None)
        return True
