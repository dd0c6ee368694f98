"""Consumer settings: every number the seeds name for the client side, as a documented default.

Why one dataclass: the seeds' client constants (pullThresholdForQueue 1 000, 100 MiB, the 50 ms
flow-control delay, pullBatchSize 32, the broker suspend of 15 s and the 30 s consumer timeout, the
20 s rebalance, the 5 s offset persist, 120 s pull-expired) are part of the behaviour a conformance
target is compared against. Naming them here lets a test, a mutant or the simulator change one and
see which requirement notices.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from reference.rules.errors import require

#: Seed 000: pullThresholdForQueue, cached messages per queue above which pulling pauses.
PULL_THRESHOLD_FOR_QUEUE = 1_000
#: Seed 000: pullThresholdSizeForQueue, cached MiB per queue above which pulling pauses.
PULL_THRESHOLD_SIZE_FOR_QUEUE_MIB = 100
#: Seed 000: PULL_TIME_DELAY_MILLS_WHEN_FLOW_CONTROL, the retry delay of a flow-controlled pull.
PULL_TIME_DELAY_MS_WHEN_FLOW_CONTROL = 50
#: Seed 000: pullTimeDelayMillsWhenException, the retry delay after a failed pull.
PULL_TIME_DELAY_MS_WHEN_EXCEPTION = 3_000
#: Seed 000: pullBatchSize (maxMsgNums of each pull).
PULL_BATCH_SIZE = 32
#: Seed 000: BROKER_SUSPEND_MAX_TIME_MILLIS, the long-poll hold the client asks for.
BROKER_SUSPEND_MAX_TIME_MS = 15_000
#: Seed 000: CONSUMER_TIMEOUT_MILLIS_WHEN_SUSPEND, how long the client waits for a held pull.
CONSUMER_TIMEOUT_MS_WHEN_SUSPEND = 30_000
#: Seed 001 §3: RebalanceService waitInterval (rocketmq.client.rebalance.waitInterval).
REBALANCE_INTERVAL_MS = 20_000
#: RocketMQ's persistConsumerOffsetInterval: the offset store is persisted every 5 s ...
PERSIST_CONSUMER_OFFSET_INTERVAL_MS = 5_000
#: ... starting 10 s after start (MQClientInstance.startScheduledTask).
PERSIST_CONSUMER_OFFSET_INITIAL_DELAY_MS = 10_000
#: RocketMQ's heartbeatBrokerInterval: heartbeats every 30 s (and at start).
HEARTBEAT_BROKER_INTERVAL_MS = 30_000
#: ProcessQueue's pullMaxIdleTime: a queue not pulled for 120 s is "pull expired" (seed 001 §4).
PULL_MAX_IDLE_TIME_MS = 120_000
#: Seed 001 §5: consumeMessageBatchMaxSize, messages per listener call.
CONSUME_MESSAGE_BATCH_MAX_SIZE = 1
#: RocketMQ's consumeThreadMin: listener calls that may run at once.
CONSUME_THREAD_MIN = 20
#: Seed 000/001: maxReconsumeTimes; after this many retries a message goes to %DLQ%.
MAX_RECONSUME_TIMES = 16
#: DefaultMQPushConsumerImpl's delay before an OFFSET_ILLEGAL queue's new offset is persisted and
#: the queue removed (executeTaskLater(..., 10000)).
OFFSET_ILLEGAL_FIX_DELAY_MS = 10_000
#: ConsumeMessageConcurrentlyService.submitConsumeRequestLater: a batch whose send-back failed is
#: consumed again locally after 5 s.
CONSUME_REQUEST_LATER_DELAY_MS = 5_000
#: DefaultMQPushConsumer's consumeTimestamp default: half an hour before start.
CONSUME_TIMESTAMP_LOOKBACK_MS = 30 * 60 * 1_000


class MessageModel(enum.StrEnum):
    CLUSTERING = "CLUSTERING"
    BROADCASTING = "BROADCASTING"


class ConsumeFromWhere(enum.StrEnum):
    """Where a queue with no committed offset starts (seed 001 §4, computePullFromWhere)."""

    CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    CONSUME_FROM_TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


@dataclass
class ClientConfig:
    """Settings of a client instance (RocketMQ's ClientConfig and MQClientInstance's schedules)."""

    rebalance_interval_ms: int = REBALANCE_INTERVAL_MS
    persist_consumer_offset_interval_ms: int = PERSIST_CONSUMER_OFFSET_INTERVAL_MS
    persist_consumer_offset_initial_delay_ms: int = PERSIST_CONSUMER_OFFSET_INITIAL_DELAY_MS
    heartbeat_broker_interval_ms: int = HEARTBEAT_BROKER_INTERVAL_MS

    def __post_init__(self) -> None:
        for name in ("rebalance_interval_ms", "persist_consumer_offset_interval_ms", "heartbeat_broker_interval_ms"):
            require(getattr(self, name) > 0, name, "must be > 0")
        require(self.persist_consumer_offset_initial_delay_ms >= 0, "persist_consumer_offset_initial_delay_ms",
                "must be >= 0")


@dataclass
class ConsumerConfig:
    consumer_group: str
    message_model: MessageModel = MessageModel.CLUSTERING
    consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    #: For CONSUME_FROM_TIMESTAMP: ms since the epoch; None means start time minus 30 minutes.
    consume_timestamp_ms: int | None = None
    #: An allocation strategy name of reference.allocation.registry ("averagely" is RocketMQ's default).
    allocate_strategy: str = "averagely"
    pull_threshold_for_queue: int = PULL_THRESHOLD_FOR_QUEUE
    pull_threshold_size_for_queue_mib: int = PULL_THRESHOLD_SIZE_FOR_QUEUE_MIB
    pull_time_delay_ms_when_flow_control: int = PULL_TIME_DELAY_MS_WHEN_FLOW_CONTROL
    pull_time_delay_ms_when_exception: int = PULL_TIME_DELAY_MS_WHEN_EXCEPTION
    pull_batch_size: int = PULL_BATCH_SIZE
    #: Pause between pulls of one queue (RocketMQ's pullInterval; 0 pulls again at once).
    pull_interval_ms: int = 0
    broker_suspend_max_time_ms: int = BROKER_SUSPEND_MAX_TIME_MS
    consumer_timeout_ms_when_suspend: int = CONSUMER_TIMEOUT_MS_WHEN_SUSPEND
    pull_max_idle_time_ms: int = PULL_MAX_IDLE_TIME_MS
    consume_message_batch_max_size: int = CONSUME_MESSAGE_BATCH_MAX_SIZE
    consume_thread_min: int = CONSUME_THREAD_MIN
    max_reconsume_times: int = MAX_RECONSUME_TIMES
    offset_illegal_fix_delay_ms: int = OFFSET_ILLEGAL_FIX_DELAY_MS
    consume_request_later_delay_ms: int = CONSUME_REQUEST_LATER_DELAY_MS
    #: RocketMQ's postSubscriptionWhenPull (default false): send the expression with every pull
    #: instead of relying on the subscription registered by heartbeat.
    post_subscription_when_pull: bool = False

    def __post_init__(self) -> None:
        require(bool(self.consumer_group), "consumerGroup", "must be a non-empty group name")
        self.message_model = MessageModel(self.message_model)
        self.consume_from_where = ConsumeFromWhere(self.consume_from_where)
        require(1 <= self.pull_batch_size <= 1024, "pullBatchSize", "must be in [1, 1024]")
        require(1 <= self.consume_message_batch_max_size <= 1024, "consumeMessageBatchMaxSize",
                "must be in [1, 1024]")
        require(self.pull_threshold_for_queue >= 1, "pullThresholdForQueue", "must be >= 1")
        require(self.pull_threshold_size_for_queue_mib >= 1, "pullThresholdSizeForQueue", "must be >= 1")
        require(self.consume_thread_min >= 1, "consumeThreadMin", "must be >= 1")
        require(self.max_reconsume_times >= -1, "maxReconsumeTimes", "must be >= -1 (-1 means 16)")
        if self.max_reconsume_times == -1:
            self.max_reconsume_times = MAX_RECONSUME_TIMES
        for name in ("pull_time_delay_ms_when_flow_control", "pull_time_delay_ms_when_exception", "pull_interval_ms",
                     "broker_suspend_max_time_ms", "offset_illegal_fix_delay_ms", "consume_request_later_delay_ms"):
            require(getattr(self, name) >= 0, name, "must be >= 0")
        require(self.consumer_timeout_ms_when_suspend > self.broker_suspend_max_time_ms,
                "consumerTimeoutMillisWhenSuspend", "must exceed brokerSuspendMaxTimeMillis")
