"""Request and response bodies of the HTTP front (the OpenAPI schema is generated from these).

Field names follow the RocketMQ request headers (``consumerGroup``, ``queueOffset``, ``maxMsgNums``,
``suspendTimeoutMillis`` → ``suspendTimeoutMs``) so that a reader who knows the remoting protocol finds
their way. Every integer carries the range of the type the broker stores it in, so out-of-range input
is refused by validation (a 4xx naming the field) instead of failing deep inside the store.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from reference.broker.permits.batch import MAX_BATCH_MESSAGES
from reference.broker.permits.service import MAX_PERMITS
from reference.broker.pop.config import PopConfig
from reference.rules.constants import MAX_PULL_BATCH, MAX_SUSPEND_TIMEOUT_MS

INT32_MAX = 2**31 - 1
#: Offsets and versions are int64 in the broker, but JSON numbers above 2**53 are not exact in many
#: JSON parsers (JavaScript's among them), so the front accepts the JSON-safe range only.
JSON_SAFE_MAX = 2**53 - 1
#: Names: RocketMQ allows letters, digits and ``%|-_`` in topic and group names, at most 127
#: characters. ``%`` is an escape in a URL path, so this API leaves it out everywhere (system topics
#: such as ``%RETRY%G`` are the broker's own and are not created or addressed through version 1).
NAME_PATTERN = r"^[|a-zA-Z0-9_-]{1,127}$"
#: A map keyed by names: only keys matching NAME_PATTERN (pydantic's patternProperties alone would
#: let other keys through in the schema).
ONLY_NAMED_KEYS = {"additionalProperties": False}


#: The largest body the front accepts (RocketMQ's default maxMessageSize is 4 MiB).
MAX_BODY_CHARS = 4 * 1024 * 1024

Name = Annotated[str, Field(pattern=NAME_PATTERN, examples=["TopicA"])]
GroupName = Annotated[str, Field(pattern=NAME_PATTERN, examples=["GroupA"])]
ClientId = Annotated[str, Field(min_length=1, max_length=255, pattern=r"^[^\x00-\x1f]+$", examples=["10.0.0.1@4242"])]
QueueId = Annotated[int, Field(ge=0, le=INT32_MAX, examples=[0])]
Offset = Annotated[int, Field(ge=0, le=JSON_SAFE_MAX, examples=[0])]
#: One tag: 1 to 255 characters, no whitespace (listed, so every regex engine agrees), no control
#: character, no ``|`` (the core forbids only ``||``; the front is stricter so the schema stays simple).
TAG_CHARS = r"[^|\x00-\x20\x7f-\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]{1,255}"
Tags = Annotated[str, Field(pattern=rf"^{TAG_CHARS}$", examples=["TagA"])]
#: ``*`` or tags separated by ``||``, with spaces around them as RocketMQ's FilterAPI allows (it trims each piece):
#: a subset of what ``reference.rules.filter.SubscriptionData.parse`` accepts, so the schema never promises more
#: than the core takes (``A || B`` was once refused here while the wire and the core accepted it: mqtck diff).
Expression = Annotated[
    str, Field(max_length=1024, pattern=rf"^ *(\*|{TAG_CHARS}( *\|\| *{TAG_CHARS})*) *$",
               examples=["*", "TagA||TagB", "TagA || TagB"])
]


class Strict(BaseModel):
    """A request body. Unknown fields are refused (a misspelt field must not be silently ignored), and
    JSON ``true``/``false`` is not a number (pydantic's lax mode would read it as 1/0). Request bodies
    have no boolean fields, so the check applies to every field."""

    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool(cls, value: object) -> object:
        if isinstance(value, bool):
            raise ValueError("must be a number or string, not a boolean")
        return value


class ErrorBody(BaseModel):
    code: str = Field(examples=["INVALID_ARGUMENT"])
    field: str = Field(examples=["queueId"])
    rule: str = Field(examples=["must be in [0, 4) for topic 'TopicA'"])


class ErrorResponse(BaseModel):
    error: ErrorBody


class CreateTopic(Strict):
    topic: Name
    queues: Annotated[int, Field(ge=1, le=1024, examples=[4])]


class TopicCreated(BaseModel):
    topic: str
    queues: int


class SendBody(Strict):
    body: Annotated[str, Field(max_length=MAX_BODY_CHARS, examples=["hello"])] = ""
    tags: Tags | None = None


class SendReceipt(BaseModel):
    topic: str = Field(examples=["TopicA"])
    queueId: int = Field(examples=[0])
    queueOffset: int = Field(examples=[0])
    msgId: str = Field(examples=["7F00000100002A9F0000000000000000"])
    commitLogOffset: int | None = Field(
        default=None, examples=[0],
        description="where the message starts in the commit log; optional: retention tests need it to know when "
                    "a segment is full, and say not applicable without it")


class PullBody(Strict):
    consumerGroup: GroupName
    queueOffset: Offset
    maxMsgNums: Annotated[int, Field(ge=1, le=MAX_PULL_BATCH, examples=[32])] = 32
    subscription: Expression | None = "*"
    suspendTimeoutMs: Annotated[int, Field(ge=0, le=MAX_SUSPEND_TIMEOUT_MS, examples=[15_000])] = 0
    commitOffset: Offset | None = None
    clientId: ClientId | None = None


class PulledMessage(BaseModel):
    queueOffset: int
    msgId: str
    tags: str | None
    body: str = Field(description="the body as UTF-8 (invalid bytes replaced); bodyBase64 is exact")
    bodyBase64: str


class PullResult(BaseModel):
    code: str = Field(examples=["SUCCESS"], description="RocketMQ response code name")
    status: str | None = Field(examples=["FOUND"], description="GetMessageStatus name")
    nextBeginOffset: int
    minOffset: int
    maxOffset: int
    heldMs: int = Field(description="how long the broker held the request (long polling)")
    messages: list[PulledMessage]


class QueueOffsets(BaseModel):
    topic: str
    queueId: int
    minOffset: int
    maxOffset: int


class ConsumerOffset(BaseModel):
    code: Literal["SUCCESS", "QUERY_NOT_FOUND"]
    offset: int = Field(description="-1 when code is QUERY_NOT_FOUND")


class CommitOffset(Strict):
    offset: Offset
    clientId: ClientId | None = None


class Subscription(Strict):
    expression: Expression = "*"
    subVersion: Annotated[int, Field(ge=0, le=JSON_SAFE_MAX)] = 0


MessageModel = Literal["CLUSTERING", "BROADCASTING"]


class ConsumerGroupData(Strict):
    messageModel: MessageModel = "CLUSTERING"
    #: Keyed by topic: a group subscribes to a topic once (a map makes that a property of the schema).
    subscriptions: Annotated[
        dict[Name, Subscription],
        Field(max_length=64, examples=[{"TopicA": {"expression": "*"}}], json_schema_extra=ONLY_NAMED_KEYS),
    ] = {}


class Heartbeat(Strict):
    connection: ClientId = Field(description="the logical connection (channel) this client speaks on")
    clientId: ClientId
    #: Keyed by consumer group.
    consumers: Annotated[
        dict[GroupName, ConsumerGroupData],
        Field(
            min_length=1, max_length=64, examples=[{"GroupA": {"subscriptions": {"TopicA": {"expression": "*"}}}}],
            json_schema_extra=ONLY_NAMED_KEYS,
        ),
    ]


class HeartbeatResult(BaseModel):
    changed: bool


class Unregister(Strict):
    connection: ClientId
    consumerGroup: GroupName


class ConsumerList(BaseModel):
    consumerGroup: str
    clientIds: list[str]


class Notifications(BaseModel):
    connection: str
    groups: list[str] = Field(description="groups whose NOTIFY_CONSUMER_IDS_CHANGED reached this connection, in order")


#: One advance of the simulated clock is at most 30 days (retention tests move past the 72 h
#: fileReservedTime; a longer single step would only run the periodic services for nothing).
MAX_ADVANCE_MS = 30 * 24 * 3_600_000


class QueueRef(Strict):
    """A message queue as the strategy exec protocol names it."""

    topic: Name
    brokerName: Name
    queueId: QueueId


class Allocate(Strict):
    """One allocation request, in the strategy exec protocol's field names (DESIGN.md)."""

    strategy: Literal["averagely", "by_circle"] = Field(description="a strategy the broker implements")
    consumerGroup: GroupName
    currentCID: ClientId
    mqAll: Annotated[list[QueueRef], Field(min_length=1, max_length=1024)]
    cidAll: Annotated[list[ClientId], Field(min_length=1, max_length=1024)]


class Allocation(BaseModel):
    result: list[QueueRef]


class AdvanceClock(Strict):
    ms: Annotated[int, Field(ge=0, le=MAX_ADVANCE_MS, examples=[5_000])]


class ClockState(BaseModel):
    clock: Literal["sim", "real"]
    nowMs: int


#: How a group consumes a topic (RocketMQ's MessageRequestMode), for the broker's allocation.
RequestMode = Literal["POP", "PULL"]


class StoreLayout(BaseModel):
    """``GET /admin/store-layout`` (capability ``store_layout``): RocketMQ's mappedFileSizeCommitLog, the
    consume queue's units per file and cleanResourceInterval."""

    commitLogSegmentBytes: int
    consumeQueueSegmentUnits: int
    cleanIntervalMs: int


class Capabilities(BaseModel):
    name: str
    clock: Literal["sim", "real"]
    capabilities: list[str]


class Done(BaseModel):
    ok: bool = True


# -- POP -------------------------------------------------------------------------------------------
#: A receipt handle as the reference writes it (seed 004 extraInfo): start offset, pop time, invisible
#: time, revive queue id, retry flag, broker name, queue id, offset, blank-separated. The schema holds
#: the shape so that a well-shaped handle that names no pending delivery is a conflict (409), not bad input.
RECEIPT_HANDLE_PATTERN = r"^[0-9]{1,19} [0-9]{1,19} [0-9]{1,19} [0-9]{1,9} [01] [!-~]{1,127} [0-9]{1,9} [0-9]{1,19}$"
ReceiptHandle = Annotated[
    str, Field(pattern=RECEIPT_HANDLE_PATTERN, examples=["0 1700000000000 60000 0 0 broker-a 0 0"])
]
InvisibleTimeMs = Annotated[
    int, Field(ge=PopConfig.min_invisible_time_ms, le=PopConfig.max_invisible_time_ms, examples=[60_000])
]
#: Strategies a POP client may name in a query of its assignment (those that need no configuration).
PopStrategy = Literal[
    "AllocateMessageQueueAveragely", "AllocateMessageQueueAveragelyByCircle", "averagely", "by_circle"
]


class PopBody(Strict):
    """PopMessageRequestHeader: queue -1 reads every queue of the topic."""

    queueId: Annotated[int, Field(ge=-1, le=INT32_MAX, examples=[-1])] = -1
    maxMsgNums: Annotated[int, Field(ge=1, le=PopConfig.max_msg_nums, examples=[32])] = 32
    invisibleTimeMs: InvisibleTimeMs = 60_000
    pollTimeMs: Annotated[int, Field(ge=0, le=PopConfig.max_poll_time_ms, examples=[0, 15_000])] = 0
    expression: Expression = "*"
    clientId: ClientId | None = None


class PoppedMessage(BaseModel):
    topic: str = Field(description="the topic the consumer named (also for a retried message)")
    queueId: int = Field(description="where it was read (the retry topic's queue when retry is true)")
    queueOffset: int
    msgId: str
    tags: str | None
    keys: str | None
    body: str = Field(description="the body as UTF-8 (invalid bytes replaced); bodyBase64 is exact")
    bodyBase64: str
    receiptHandle: str = Field(description="names this delivery in ack and changeInvisibleTime")
    reconsumeTimes: int
    retry: bool
    properties: dict[str, str]
    storeTimestamp: int
    bornTimestamp: int


class PopResult(BaseModel):
    code: Literal["SUCCESS", "POLLING_FULL", "POLLING_TIMEOUT"] = Field(examples=["SUCCESS"])
    status: str = Field(examples=["FOUND"], description="FOUND, or NO_MESSAGE (the code says why)")
    messages: list[PoppedMessage]
    restNum: int = Field(description="messages left behind in the queues the pop visited")
    popTime: int
    invisibleTimeMs: int
    heldMs: int = Field(description="how long the broker held the pop (long polling)")


class AckBody(Strict):
    receiptHandle: ReceiptHandle
    clientId: ClientId | None = None


class Acked(BaseModel):
    msgId: str


class ChangeInvisibleBody(Strict):
    receiptHandle: ReceiptHandle
    invisibleTimeMs: InvisibleTimeMs
    clientId: ClientId | None = None


class InvisibleTimeChanged(BaseModel):
    msgId: str
    receiptHandle: str = Field(description="replaces the handle given, which is no longer valid")
    popTime: int
    invisibleTimeMs: int


class AssignedQueue(BaseModel):
    topic: str
    brokerName: str
    queueId: int = Field(description="-1: every queue of the topic (popShareQueueNum <= 0)")


class Assignment(BaseModel):
    consumerGroup: str
    clientId: str
    queues: list[AssignedQueue]


# -- permits (Pulsar-style flow control) ---------------------------------------------------------------
class PermitSubscribe(Strict):
    clientId: ClientId = Field(description="the consumer's name (Pulsar consumerName)")
    subType: Literal["Exclusive", "Failover", "Shared"] = "Exclusive"
    queueId: QueueId = 0
    initialPosition: Literal["Latest", "Earliest"] = Field(
        "Latest", description="where a new subscription starts (an existing one resumes after its acks)"
    )


class PermitConsumer(BaseModel):
    subscription: str
    topic: str
    clientId: str
    permits: int = Field(description="permits not yet used by a dispatch")


class Flow(Strict):
    messagePermits: Annotated[int, Field(ge=1, le=MAX_PERMITS, examples=[1_000])]


class PositionRef(Strict):
    offset: Offset
    batchIndex: Annotated[int, Field(ge=0, lt=MAX_BATCH_MESSAGES)] = 0


class PermitAck(Strict):
    positions: Annotated[list[PositionRef], Field(max_length=10_000)]


class PermitAcked(BaseModel):
    acknowledged: int = Field(description="positions newly acknowledged (unknown or repeated ones are ignored)")


class Redeliver(Strict):
    positions: Annotated[list[PositionRef], Field(max_length=10_000)] | None = Field(
        None, description="the messages to send again; absent: every unacknowledged message of this consumer"
    )


class DispatchedMessage(BaseModel):
    msgId: str
    offset: int
    batchIndex: int
    batchSize: int
    tags: str | None
    body: str = Field(description="the body as UTF-8 (invalid bytes replaced); bodyBase64 is exact")
    bodyBase64: str
    redeliveryCount: int


class Dispatched(BaseModel):
    clientId: str
    messages: list[DispatchedMessage] = Field(description="every message dispatched to this consumer since it "
                                                          "subscribed, in dispatch order")


#: A batch's bodies: at most MAX_BATCH_MESSAGES, together at most MAX_BODY_CHARS (so each at most
#: its share: the schema then bounds the whole entry).
BATCH_BODY_CHARS = MAX_BODY_CHARS // MAX_BATCH_MESSAGES


class SendBatchBody(Strict):
    bodies: Annotated[
        list[Annotated[str, Field(max_length=BATCH_BODY_CHARS)]],
        Field(min_length=1, max_length=MAX_BATCH_MESSAGES, examples=[["a", "b", "c"]]),
    ]
