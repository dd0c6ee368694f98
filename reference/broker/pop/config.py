"""PopConfig: every number of POP consumption (seed 004), as a named, documented default.

Why a separate dataclass from :class:`~reference.broker.config.BrokerConfig`: the POP constants
(checkpoint stay times, revive delay, retry probability, the revive queue count) are a unit that a
test, a simulation or an operator tunes together, and they are what a POP conformance target is
compared against.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Seed 004 §4.2.1: ``random.nextInt(100)``, and the retry topic is read first when it divides by 5.
RANDOM_Q_BOUND = 100
RETRY_FIRST_MODULUS = 5
#: Seed 004 §4.4.1: a checkpoint is only buffered if its revive time is at least the stay timeout plus
#: 1.5 s away (``getPopCkStayBufferTimeOut() + 1500``).
CK_BUFFER_ADMISSION_SLACK_MS = 1_500


@dataclass
class PopConfig:
    #: Cluster name; the revive log is the store topic ``rmq_sys_REVIVE_LOG_{cluster_name}``.
    cluster_name: str = "DefaultCluster"
    #: Queues of the revive log (RocketMQ's reviveQueueNum, 8). Pops use them round-robin.
    revive_queue_num: int = 8
    #: Queues of a POP retry topic (RocketMQ's PopAckConstants.retryQueueNum, 1); revived messages go
    #: to queue 0.
    retry_queue_num: int = 1
    #: Seed 004 §3.4.1: match checkpoints and acks in memory first (enablePopBufferMerge).
    enable_pop_buffer_merge: bool = True
    #: Seed 004 §4.4.3: a checkpoint leaves memory after this long (popCkStayBufferTime, 10 s).
    pop_ck_stay_buffer_time_ms: int = 10_000
    #: Seed 004 §2.3, §4.4.3: ... or when its revive time is closer than this (popCkStayBufferTimeOut, 3 s).
    pop_ck_stay_buffer_timeout_ms: int = 3_000
    #: Seed 004 §4.4.1: at most this many checkpoints are buffered (popCkMaxBufferSize).
    pop_ck_max_buffer_size: int = 200_000
    #: Seed 004 §4.4.4-§4.4.5: a checkpoint is revived once its revive time is older than
    #: ackTimeInterval + 1 s, so that acks written just before the revive time are read first.
    ack_time_interval_ms: int = 1_000
    revive_extra_delay_ms: int = 1_000
    #: Largest batch one pop may ask for (RocketMQ refuses maxMsgNums above 32 for POP).
    max_msg_nums: int = 32
    #: Bounds on a pop's invisible time and on change-invisible (the RocketMQ proxy's 12 h ceiling).
    min_invisible_time_ms: int = 1
    max_invisible_time_ms: int = 12 * 3_600_000
    #: Longest long poll a pop may ask for (the gRPC clients' long_polling_timeout is at most 20 s;
    #: we allow up to the pull path's suspend ceiling).
    max_poll_time_ms: int = 3_600_000
    #: Seed 004 §4.2.1: held pops per queue key beyond which POLLING_FULL (RocketMQ's popPollingSize, 1024; it holds
    #: one more, comparing with ">").
    pop_polling_size: int = 1_024

    def __post_init__(self) -> None:
        positive = (
            "revive_queue_num", "retry_queue_num", "pop_ck_stay_buffer_time_ms", "pop_ck_stay_buffer_timeout_ms",
            "max_msg_nums", "min_invisible_time_ms", "max_invisible_time_ms", "pop_polling_size",
        )
        for name in positive:
            if getattr(self, name) <= 0:
                raise ValueError(f"PopConfig.{name}: must be > 0, got {getattr(self, name)!r}")
        for name in ("pop_ck_max_buffer_size", "ack_time_interval_ms", "revive_extra_delay_ms", "max_poll_time_ms"):
            if getattr(self, name) < 0:
                raise ValueError(f"PopConfig.{name}: must be >= 0, got {getattr(self, name)!r}")
        if self.min_invisible_time_ms > self.max_invisible_time_ms:
            raise ValueError("PopConfig.min_invisible_time_ms: must not exceed max_invisible_time_ms")

    @property
    def revive_delay_ms(self) -> int:
        """How long after its revive time a checkpoint is revived (ackTimeInterval + 1 s = 2 s)."""
        return self.ack_time_interval_ms + self.revive_extra_delay_ms
