"""Requests, answers and codes of POP consumption, as the broker core sees them (no bytes).

Transports translate their wire format (remoting POP_MESSAGE / ACK_MESSAGE / CHANGE_MESSAGE_INVISIBLETIME,
gRPC ReceiveMessage / AckMessage / ChangeInvisibleDuration) to these and back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from reference.rules.codes import ResponseCode

#: Queue id of a pop that reads every queue of the topic (seed 004 §4.2.1).
ALL_QUEUES = -1
#: Defaults of a pop request: RocketMQ's 32-message batch, the proxy's 60 s invisible time.
DEFAULT_MAX_MSG_NUMS = 32
DEFAULT_INVISIBLE_TIME_MS = 60_000


@dataclass(frozen=True)
class PopMessageRequest:
    """PopMessageRequestHeader: what a consumer sends to pop a batch."""

    consumer_group: str
    topic: str
    queue_id: int = ALL_QUEUES
    max_msg_nums: int = DEFAULT_MAX_MSG_NUMS
    invisible_time_ms: int = DEFAULT_INVISIBLE_TIME_MS
    #: How long the broker may hold the pop when it finds nothing (0: answer at once).
    poll_time_ms: int = 0
    expression: str | None = "*"
    client_id: str = ""
    #: An ordered pop (PopMessageRequestHeader.order): one batch in flight per queue and group, no
    #: checkpoint, no retry topic (seed 004 lines 412-413, 428, 457, 546-549, 592-599).
    order: bool = False


@dataclass(frozen=True)
class PoppedMessage:
    """One message of a pop answer. ``topic`` is the topic the consumer asked for, also for a
    message read from the retry topic (``retry`` is then True); ``queue_id``/``queue_offset`` are
    where it was read (in the retry topic for a retried message)."""

    topic: str
    queue_id: int
    queue_offset: int
    body: bytes
    tags: str | None
    keys: str | None
    properties: Mapping[str, str]
    msg_id: str
    handle: str
    reconsume_times: int
    retry: bool
    store_timestamp: int
    born_timestamp: int
    #: Where the message (in the retry topic for a retried one) starts in the commit log: a wire record
    #: carries it (PHYSICALOFFSET).
    commit_log_offset: int = 0


@dataclass(frozen=True)
class PopResponse:
    code: ResponseCode
    #: FOUND, or NO_MESSAGE when nothing was popped (the code says why).
    status: str
    messages: tuple[PoppedMessage, ...] = ()
    #: Messages left behind in the queues the pop visited (seed 004 §4.2.2, restNum).
    rest_num: int = 0
    pop_time: int = 0
    invisible_time_ms: int = 0
    revive_queue_id: int = 0
    #: How long the broker held the pop before answering (0 when answered at once).
    held_ms: int = 0
    #: An ordered pop's consume counts (orderCountInfo, seed 004 lines 496-498, 594-599): (retry, queue id,
    #: queue offset) -> how often that message was handed out before this answer.
    order_counts: Mapping[tuple[bool, int, int], int] = field(default_factory=dict)


@dataclass(frozen=True)
class AckResult:
    msg_id: str


@dataclass(frozen=True)
class ChangeInvisibleResult:
    msg_id: str
    #: The handle that replaces the one given (which is no longer valid).
    handle: str
    pop_time: int
    invisible_time_ms: int


class PopChannel(Protocol):
    """A client connection able to receive the late answer of a held pop."""

    key: str

    def deliver_pop(self, request: PopMessageRequest, response: PopResponse) -> None: ...


@dataclass(eq=False)
class RecordingPopChannel:
    """Keeps what the broker sent; used by tests and targets."""

    key: str

    def __post_init__(self) -> None:
        self.pop_responses: list[tuple[PopMessageRequest, PopResponse]] = []
        self.notifications: list[str] = []

    def deliver_pop(self, request: PopMessageRequest, response: PopResponse) -> None:
        self.pop_responses.append((request, response))

    def deliver_pull(self, request: object, response: object) -> None:  # a POP client never pulls
        pass

    def notify_consumer_ids_changed(self, group: str) -> None:
        self.notifications.append(group)
