"""The broker's own limits on dispatch, above the consumer's permits: a dispatch rate and unacknowledged messages.

Seed 003's ``readMoreEntries`` asks ``calculateToRead`` how much it may read, and skips the read when the topic or
dispatcher "has exceeded the dispatch rate" (lines 33-34): permits say what a consumer can take, the rate says what
the broker will send. The seed gives no numbers; the defaults are upstream Pulsar's broker.conf: no rate limit
(``dispatchThrottlingRatePerSubscriptionInMsg=0``) over periods of one second (``ratePeriodInSecond=1``), and a
read skipped for the rate is tried again a period later (``MESSAGE_RATE_BACKOFF_MS``).

``maxUnackedMessagesPerConsumer`` (upstream default 50 000, not in the seed) blocks a shared subscription's consumer
that holds that many unacknowledged messages: it is sent nothing more, whatever its permits, until acks bring it
down to half the limit (upstream ``Consumer.removePendingAcks``). A consumer is never sent more in one go than the
limit leaves room for (upstream ``PersistentDispatcherMultipleConsumers``, ``maxAdditionalUnackedMessages``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from reference.clock import Clock, TimerHandle
from reference.rules.errors import require

#: broker.conf dispatchThrottlingRatePerSubscriptionInMsg: messages a subscription is sent per period (0: no limit).
DISPATCH_RATE_PER_SUBSCRIPTION_MSGS = 0
#: broker.conf ratePeriodInSecond: the rate's period.
DISPATCH_RATE_PERIOD_MS = 1_000
#: How long a read skipped for the rate waits before it is tried again (upstream MESSAGE_RATE_BACKOFF_MS).
RATE_BACKOFF_MS = 1_000
#: broker.conf maxUnackedMessagesPerConsumer (0: no limit).
MAX_UNACKED_MESSAGES_PER_CONSUMER = 50_000

#: Pulsar's setting names, as an operator writes them (broker.conf, namespace policies).
RATE_SETTING = "dispatchThrottlingRatePerSubscriptionInMsg"
UNACKED_SETTING = "maxUnackedMessagesPerConsumer"


@dataclass
class PermitLimits:
    """The broker's dispatch limits (0 turns one off)."""

    dispatch_rate_msgs: int = DISPATCH_RATE_PER_SUBSCRIPTION_MSGS
    rate_period_ms: int = DISPATCH_RATE_PERIOD_MS
    max_unacked_per_consumer: int = MAX_UNACKED_MESSAGES_PER_CONSUMER

    def change(self, settings: dict[str, object]) -> dict[str, int]:
        """Apply settings by Pulsar's names, all or none (InvalidRequest naming the setting and the rule); returns
        the values they replaced."""
        fields = {RATE_SETTING: "dispatch_rate_msgs", UNACKED_SETTING: "max_unacked_per_consumer"}
        for name, value in settings.items():
            require(name in fields, name, f"not a dispatch limit ({', '.join(fields)})")
            require(
                not isinstance(value, bool) and isinstance(value, int) and value >= 0, name,
                f"must be an integer >= 0 (0: no limit), got {value!r}",
            )
        previous = {name: getattr(self, fields[name]) for name in settings}
        for name, value in settings.items():
            setattr(self, fields[name], value)
        return previous

    def unacked_room(self, unacked: int) -> int | None:
        """How many more messages a consumer holding ``unacked`` may be sent (None: no limit)."""
        if self.max_unacked_per_consumer <= 0:
            return None
        return max(self.max_unacked_per_consumer - unacked, 0)

    def blocks(self, unacked: int) -> bool:
        """A consumer holding ``unacked`` messages is blocked from now on."""
        return self.max_unacked_per_consumer > 0 and unacked >= self.max_unacked_per_consumer

    def releases(self, unacked: int) -> bool:
        """A blocked consumer holding ``unacked`` messages is released (at half the limit, or with no limit)."""
        return self.max_unacked_per_consumer <= 0 or unacked <= self.max_unacked_per_consumer // 2


class DispatchRateLimiter:
    """One subscription's message quota per period of the broker's clock (periods counted from the limiter's
    start). What a period allows is spent by what was sent; a batch entry sent whole may overdraw it, and the
    overdraft is paid from the next period, as Pulsar's rate limiter consumes tokens after the dispatch."""

    def __init__(self, limits: PermitLimits, clock: Clock) -> None:
        self.limits = limits
        self.clock = clock
        self._start = clock.now_ms()
        self._period = 0
        self._spent = 0
        self._retry: TimerHandle | None = None

    def _roll(self) -> None:
        period = (self.clock.now_ms() - self._start) // max(self.limits.rate_period_ms, 1)
        if period != self._period:
            rate = self.limits.dispatch_rate_msgs
            self._spent = max(self._spent - rate * (period - self._period), 0)
            self._period = period

    def available(self) -> int | None:
        """Messages that may be sent now (None: no rate set)."""
        if self.limits.dispatch_rate_msgs <= 0:
            return None
        self._roll()
        return max(self.limits.dispatch_rate_msgs - self._spent, 0)

    def spend(self, messages: int) -> None:
        if self.limits.dispatch_rate_msgs > 0:
            self._roll()
            self._spent += messages

    def retry_later(self, read_more: Callable[[], None]) -> None:
        """Schedule one later read (the skipped read's back-off), unless one is already waiting."""
        if self._retry is not None:
            return

        def fire() -> None:
            self._retry = None
            read_more()

        self._retry = self.clock.call_later(RATE_BACKOFF_MS, fire)
