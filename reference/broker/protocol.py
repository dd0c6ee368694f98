"""Request and response values of the broker core (the response codes are :mod:`reference.rules.codes`).

Transports translate their wire format to these and back; the core never sees bytes.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Protocol

from reference.rules.codes import ResponseCode
from reference.rules.status import GetMessageStatus
from reference.store.message import StoredMessage


class PullSysFlag(enum.IntFlag):
    """Bits of the pull request's sysFlag (seed 000, pullKernelImpl)."""

    COMMIT_OFFSET = 0x1
    SUSPEND = 0x2
    SUBSCRIPTION = 0x4
    CLASS_FILTER = 0x8


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
