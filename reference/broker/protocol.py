"""Request and response values of the broker core, shared with the clients that speak to it (the response codes
are :mod:`reference.rules.codes`).

Transports translate their wire format to these and back; the core never sees bytes.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Protocol

from reference.rules.codes import ResponseCode
from reference.rules.errors import require
from reference.rules.filter import SubscriptionData
from reference.rules.status import GetMessageStatus
from reference.store.message import StoredMessage


class PullSysFlag(enum.IntFlag):
    """Bits of the pull request's sysFlag (seed 000, pullKernelImpl)."""

    COMMIT_OFFSET = 0x1
    SUSPEND = 0x2
    SUBSCRIPTION = 0x4
    CLASS_FILTER = 0x8

    @classmethod
    def of(cls, *, suspend_ms: int, subscription: str | None, commit_offset: int | None) -> PullSysFlag:
        """The bits a consumer sets (pullKernelImpl): SUSPEND when it may be held, SUBSCRIPTION when it sends its
        expression, COMMIT_OFFSET when it carries an offset to commit; every front and target builds them here."""
        flag = cls(0)
        if suspend_ms > 0:
            flag |= cls.SUSPEND
        if subscription is not None:
            flag |= cls.SUBSCRIPTION
        if commit_offset is not None:
            flag |= cls.COMMIT_OFFSET
        return flag


@dataclass(frozen=True)
class PullMessageRequest:
    """PullMessageRequestHeader (seed 000): what a consumer sends to pull one queue."""

    consumer_group: str
    topic: str
    queue_id: int
    queue_offset: int
    max_msg_nums: int = 32
    sys_flag: int = PullSysFlag.SUSPEND | PullSysFlag.SUBSCRIPTION
    commit_offset: int = 0
    suspend_timeout_ms: int = 15_000
    subscription: str | None = "*"
    sub_version: int = 0
    client_id: str = ""

    @property
    def has_suspend(self) -> bool:
        return bool(self.sys_flag & PullSysFlag.SUSPEND)

    @property
    def has_commit_offset(self) -> bool:
        return bool(self.sys_flag & PullSysFlag.COMMIT_OFFSET)

    @property
    def has_subscription(self) -> bool:
        return bool(self.sys_flag & PullSysFlag.SUBSCRIPTION)


@dataclass(frozen=True)
class PullResponse:
    code: ResponseCode
    status: GetMessageStatus | None
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: tuple[StoredMessage, ...] = ()
    remark: str = ""
    #: How long the broker held the request before answering (0 when answered at once).
    held_ms: int = 0


@dataclass(frozen=True)
class QueryOffsetResult:
    code: ResponseCode
    offset: int = -1
    remark: str = ""


class Channel(Protocol):
    """A client connection as the core sees it.

    ``key`` identifies the connection (RocketMQ keys ConsumerGroupInfo's table by the Netty
    channel). The core answers held pulls and sends ids-changed notifications through it.
    """

    key: str

    def deliver_pull(self, request: PullMessageRequest, response: PullResponse) -> None: ...

    def notify_consumer_ids_changed(self, group: str) -> None: ...


@dataclass(eq=False)
class RecordingChannel:
    """A channel that keeps what the broker sent it; used by tests, the simulator and targets."""

    key: str
    pull_responses: list[tuple[PullMessageRequest, PullResponse]] = field(default_factory=list)
    notifications: list[str] = field(default_factory=list)

    def deliver_pull(self, request: PullMessageRequest, response: PullResponse) -> None:
        self.pull_responses.append((request, response))

    def notify_consumer_ids_changed(self, group: str) -> None:
        self.notifications.append(group)


MESSAGE_MODELS = ("CLUSTERING", "BROADCASTING")
CONSUME_TYPES = ("CONSUME_PASSIVELY", "CONSUME_ACTIVELY", "CONSUME_POP")


@dataclass(frozen=True)
class ConsumerData:
    """One group's part of a heartbeat."""

    group: str
    subscriptions: tuple[SubscriptionData, ...]
    message_model: str = "CLUSTERING"
    consume_type: str = "CONSUME_PASSIVELY"
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"

    def validate(self) -> None:
        require(bool(self.group), "consumerData.groupName", "must be a non-empty group name")
        require(
            self.message_model in MESSAGE_MODELS, "consumerData.messageModel", f"must be one of {MESSAGE_MODELS}"
        )
        require(
            self.consume_type in CONSUME_TYPES, "consumerData.consumeType", f"must be one of {CONSUME_TYPES}"
        )
        topics = [s.topic for s in self.subscriptions]
        require(len(topics) == len(set(topics)), "consumerData.subscriptionDataSet", "topics must be distinct")


@dataclass(frozen=True)
class SendBackResult:
    """Where the copy went: ``topic`` is the retry or dead-letter topic; for a retry, the copy waits
    in ``SCHEDULE_TOPIC`` queue ``schedule_queue_id`` at ``queue_offset`` until ``due_ms``."""

    topic: str
    dead_letter: bool
    delay_level: int
    reconsume_times: int
    queue_id: int
    queue_offset: int
    due_ms: int
