"""Broker settings, each defaulting to a named constant of the seeds (:mod:`reference.rules.constants`)."""

from __future__ import annotations

from dataclasses import dataclass

from reference.broker.subscription_groups import AUTO_CREATE_SUBSCRIPTION_GROUP
from reference.rules.constants import (
    CHANNEL_EXPIRED_TIMEOUT_MS,
    CHANNEL_SCAN_INTERVAL_MS,
    LONG_POLLING_CHECK_INTERVAL_MS,
    MAX_PULL_BATCH,
    MAX_SUSPEND_TIMEOUT_MS,
    SHORT_POLLING_TIME_MS,
)


@dataclass
class BrokerConfig:
    broker_name: str = "broker-a"
    #: Seed 000: longPollingEnable. Off means short polling: hold ``short_polling_time_ms`` and no
    #: wake-up on arrival (arrivals notify held pulls only while it is on; it may change at run time).
    long_polling_enable: bool = True
    short_polling_time_ms: int = SHORT_POLLING_TIME_MS
    long_polling_check_interval_ms: int = LONG_POLLING_CHECK_INTERVAL_MS
    #: Seed 001 §6.2: notifyConsumerIdsChangedEnable.
    notify_consumer_ids_changed_enable: bool = True
    channel_expired_timeout_ms: int = CHANNEL_EXPIRED_TIMEOUT_MS
    channel_scan_interval_ms: int = CHANNEL_SCAN_INTERVAL_MS
    max_pull_batch: int = MAX_PULL_BATCH
    max_suspend_timeout_ms: int = MAX_SUSPEND_TIMEOUT_MS
    #: Upstream's autoCreateSubscriptionGroup: a group the broker does not know is created when a pop or a heartbeat
    #: names it. Off, such a group does not exist: its pops are refused and its due checkpoints skipped (REVIVE-9).
    auto_create_subscription_group: bool = AUTO_CREATE_SUBSCRIPTION_GROUP

    @property
    def hold_check_interval_ms(self) -> int:
        """How often held pulls are re-checked: 5 s long polling, shortPollingTimeMills otherwise."""
        return self.long_polling_check_interval_ms if self.long_polling_enable else self.short_polling_time_ms
