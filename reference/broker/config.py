"""Broker settings. Every number the seeds name is here, as a documented default."""

from __future__ import annotations

from dataclasses import dataclass

#: Seed 000: PullRequestHoldService waits 5 s between checks when long polling is on.
LONG_POLLING_CHECK_INTERVAL_MS = 5_000
#: Seed 000: shortPollingTimeMills, both the hold time and the check interval when long polling is off.
SHORT_POLLING_TIME_MS = 1_000
#: RocketMQ's ClientHousekeepingService scans for idle channels every 10 s.
CHANNEL_SCAN_INTERVAL_MS = 10_000
#: RocketMQ's channelExpiredTimeout: a channel with no heartbeat for 120 s is removed.
CHANNEL_EXPIRED_TIMEOUT_MS = 120_000
#: Largest pull batch a request may ask for (RocketMQ clients refuse pullBatchSize above 1024).
MAX_PULL_BATCH = 1_024
#: Longest suspend a request may ask for; seed 000's client asks 15 s and times out at 30 s.
MAX_SUSPEND_TIMEOUT_MS = 3_600_000


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

    @property
    def hold_check_interval_ms(self) -> int:
        """How often held pulls are re-checked: 5 s long polling, shortPollingTimeMills otherwise."""
        return self.long_polling_check_interval_ms if self.long_polling_enable else self.short_polling_time_ms
