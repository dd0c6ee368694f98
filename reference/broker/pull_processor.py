"""PullMessageProcessor: answers a pull from the store's GetMessageResult (seed 000, seed 002 §1).

Theory of operation
-------------------
``process_request`` validates the request, reads the store, maps the GetMessageStatus to a response
code through :data:`reference.rules.codes.STATUS_TO_CODE` (the one place that rule lives), and then does one of two
things:

* answers at once (:class:`PullOutcome` with ``response``), or
* when the answer is PULL_NOT_FOUND, the broker allows suspending and the request carries the
  SUSPEND flag, returns a :class:`HeldPullRequest` for the caller to hand to the
  PullRequestHoldService (``response`` is None).

Handing over is the caller's step, not this module's: the two steps are separate on purpose, so
the property suites can put a message arrival *between* "not found" and "suspended" (the race of
RocketMQ issue #7358) and check that the hold service still wakes the request.

A request woken from the hold service is re-executed with ``broker_allow_suspend=False``: it is
answered whatever it finds and never suspended twice. The commit-offset piggyback is applied only
when suspending is allowed, so a woken request does not commit a second time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from reference.broker.config import BrokerConfig
from reference.broker.protocol import Channel, PullMessageRequest, PullResponse
from reference.clock import Clock
from reference.rules.codes import STATUS_TO_CODE, ResponseCode, response_code_for
from reference.rules.errors import InvalidRequest, require
from reference.rules.filter import SubscriptionData
from reference.rules.status import GetMessageStatus
from reference.store.offsets import ConsumerOffsetManager
from reference.store.store import MessageStore


@dataclass(eq=False)
class HeldPullRequest:
    """A suspended pull (RocketMQ's PullRequest in the hold service)."""

    request: PullMessageRequest
    channel: Channel
    subscription: SubscriptionData
    #: How long to hold: the request's suspend timeout, or shortPollingTimeMills when long
    #: polling is off.
    timeout_ms: int
    suspend_timestamp: int

    @property
    def pull_from_this_offset(self) -> int:
        return self.request.queue_offset

    @property
    def deadline_ms(self) -> int:
        return self.suspend_timestamp + self.timeout_ms


@dataclass(frozen=True)
class PullOutcome:
    """Either ``response`` (answer now) or ``held`` (hand to the hold service)."""

    response: PullResponse | None
    held: HeldPullRequest | None = None


#: Callback for accepted piggybacked commits: (group, client_id, topic, queue_id, offset).
CommitListener = Callable[[str, str, str, int, int], None]


class PullMessageProcessor:
    #: GetMessageStatus -> response code (:data:`STATUS_TO_CODE`); a class attribute so that a seeded
    #: fault can change one entry without touching the processor's code.
    code_table: dict[GetMessageStatus, ResponseCode] = STATUS_TO_CODE

    def __init__(
        self,
        store: MessageStore,
        offsets: ConsumerOffsetManager,
        config: BrokerConfig,
        clock: Clock,
        subscription_lookup: Callable[[str, str], SubscriptionData | None],
        on_commit: CommitListener | None = None,
    ) -> None:
        self.store = store
        self.offsets = offsets
        self.config = config
        self.clock = clock
        self._subscription_lookup = subscription_lookup
        self._on_commit = on_commit

    def validate(self, request: PullMessageRequest) -> SubscriptionData:
        """Refuse a malformed request before anything happens; returns the subscription to use."""
        require(bool(request.consumer_group), "consumerGroup", "must be a non-empty group name")
        queue_nums = self.store.queue_nums(request.topic)  # raises TopicNotFound
        require(
            0 <= request.queue_id < queue_nums,
            "queueId",
            f"must be in [0, {queue_nums}) for topic {request.topic!r}",
        )
        require(request.queue_offset >= 0, "queueOffset", "must be >= 0")
        require(
            1 <= request.max_msg_nums <= self.config.max_pull_batch,
            "maxMsgNums",
            f"must be in [1, {self.config.max_pull_batch}]",
        )
        require(
            0 <= request.suspend_timeout_ms <= self.config.max_suspend_timeout_ms,
            "suspendTimeoutMillis",
            f"must be in [0, {self.config.max_suspend_timeout_ms}]",
        )
        if request.has_commit_offset:
            require(request.commit_offset >= 0, "commitOffset", "must be >= 0 when the COMMIT_OFFSET flag is set")
        if request.has_subscription:
            return SubscriptionData.parse(request.topic, request.subscription, request.sub_version)
        registered = self._subscription_lookup(request.consumer_group, request.topic)
        if registered is None:
            raise InvalidRequest(
                "subscription",
                f"group {request.consumer_group!r} has no subscription to {request.topic!r}; "
                "send the SUBSCRIPTION flag with an expression or heartbeat first",
                "SUBSCRIPTION_NOT_EXIST",
            )
        return registered

    def hold_time_ms(self, request: PullMessageRequest) -> int:
        """How long a held request waits: its suspend timeout with long polling, else
        shortPollingTimeMills; 0 for a request without the SUSPEND flag."""
        if not request.has_suspend:
            return 0
        return request.suspend_timeout_ms if self.config.long_polling_enable else self.config.short_polling_time_ms

    def store_offset_enable(self, request: PullMessageRequest, broker_allow_suspend: bool) -> bool:
        """Seed 000: storeOffsetEnable = brokerAllowSuspend && hasCommitOffsetFlag && master, so a held
        request re-executed on wake-up does not commit a second time (a newer commit may be stored)."""
        return broker_allow_suspend and request.has_commit_offset

    def process_request(
        self,
        request: PullMessageRequest,
        channel: Channel,
        broker_allow_suspend: bool,
        subscription: SubscriptionData | None = None,
    ) -> PullOutcome:
        """``subscription`` is what :meth:`validate` returned, when the caller already validated."""
        if subscription is None:
            subscription = self.validate(request)
        result = self.store.get_message(
            request.consumer_group,
            request.topic,
            request.queue_id,
            request.queue_offset,
            request.max_msg_nums,
            subscription,
        )
        code = response_code_for(result.status, request.queue_offset, self.code_table)
        outcome: PullOutcome
        if code == ResponseCode.PULL_NOT_FOUND and broker_allow_suspend and request.has_suspend:
            held = HeldPullRequest(request, channel, subscription, self.hold_time_ms(request), self.clock.now_ms())
            outcome = PullOutcome(None, held)
        else:
            outcome = PullOutcome(
                PullResponse(
                    code=code,
                    status=result.status,
                    next_begin_offset=result.next_begin_offset,
                    min_offset=result.min_offset,
                    max_offset=result.max_offset,
                    messages=tuple(result.messages),
                )
            )
        if self.store_offset_enable(request, broker_allow_suspend):
            self.offsets.commit_offset(
                request.consumer_group, request.topic, request.queue_id, request.commit_offset
            )
            if self._on_commit is not None:
                self._on_commit(
                    request.consumer_group, request.client_id, request.topic, request.queue_id,
                    request.commit_offset,
                )
        return outcome
