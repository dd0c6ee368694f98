"""Long-poll wake-up on simulated time (LPOLL): random arrivals, filters, timeouts, check intervals,
and arrivals placed *between* the processor's "not found" and the hold service's suspend.

The oracle is exact: for each held pull it computes the instant the answer is due and checks the
broker answered exactly then, exactly once. From it follow the properties the spec states: never
empty before the timeout while no matching message arrived; never later than timeout plus one check
interval; with the listener on, woken at the arrival of the first matching message; non-matching
arrivals never wake.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from properties.harness import sim_broker
from reference.broker.broker import BrokerComponents
from reference.broker.config import BrokerConfig
from reference.broker.hold_service import PullRequestHoldService
from reference.broker.protocol import PullMessageRequest, RecordingChannel
from reference.rules.codes import ResponseCode
from reference.rules.filter import SubscriptionData
from reference.store.message import Message

TAGS = ("A", "B", "C")
FILTERS = ("*", "A", "B||C")
QUEUES = 2


@dataclass(frozen=True)
class Pull:
    """A pull at the queue's max offset (so it finds nothing); ``arrivals_before_suspend`` are
    messages stored after the processor answered "not found" and before the request is held."""

    queue: int
    expression: str
    timeout_ms: int
    arrivals_before_suspend: tuple[str, ...] = ()


@dataclass(frozen=True)
class Arrive:
    queue: int
    tag: str


@dataclass(frozen=True)
class Wait:
    ms: int


Step = Pull | Arrive | Wait

steps = st.lists(
    st.one_of(
        st.builds(
            Pull,
            st.integers(0, QUEUES - 1),
            st.sampled_from(FILTERS),
            st.sampled_from((0, 500, 1_000, 3_000, 5_000, 15_000)) | st.integers(0, 20_000),
            st.lists(st.sampled_from(TAGS), max_size=2).map(tuple),
        ),
        st.builds(Arrive, st.integers(0, QUEUES - 1), st.sampled_from(TAGS)),
        st.builds(Wait, st.sampled_from((1, 999, 1_000, 4_999, 5_000)) | st.integers(0, 12_000)),
    ),
    min_size=1,
    max_size=25,
)
configs = st.builds(
    BrokerConfig,
    long_polling_enable=st.booleans(),
    short_polling_time_ms=st.sampled_from((1_000, 700)),
    long_polling_check_interval_ms=st.sampled_from((5_000, 2_000)),
)


class TimedChannel(RecordingChannel):
    """Notes the simulated instant of each delivered answer."""

    clock = None
    delivered_at: list[int]

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.delivered_at = []

    def deliver_pull(self, request, response) -> None:  # type: ignore[no-untyped-def]
        super().deliver_pull(request, response)
        self.delivered_at.append(self.clock.now_ms())


@dataclass
class Held:
    index: int
    step: Pull
    offset: int
    suspended_at: int
    #: How many arrivals had happened when the request was held (the ones before it raced the suspend).
    arrivals_at_suspend: int
    #: How long the broker holds it: the asked timeout with long polling, shortPollingTimeMills without.
    hold_ms: int
    answers: list[tuple[int, object]] = field(default_factory=list)


def run_schedule(schedule: list[Step], config: BrokerConfig, hold_cls: type[PullRequestHoldService]) -> None:
    channel = TimedChannel("client-1")
    arrivals: list[tuple[int, int, int, str]] = []  # (time, queue, offset, tag), in the order they happened
    helds: list[Held] = []
    components = BrokerComponents(hold_service=hold_cls)
    with sim_broker(config, components, {"T": QUEUES}) as (broker, clock, _sink):
        channel.clock = clock
        start = clock.now_ms()
        by_request: dict[int, Held] = {}

        def arrive(queue: int, tag: str) -> None:
            result = broker.send(Message("T", b"x", queue, tags=tag))
            arrivals.append((clock.now_ms(), queue, result.queue_offset, tag))

        for i, step in enumerate(schedule):
            if isinstance(step, Wait):
                clock.advance(step.ms)
            elif isinstance(step, Arrive):
                arrive(step.queue, step.tag)
            else:
                offset = broker.store.get_max_offset_in_queue("T", step.queue)
                request = PullMessageRequest(
                    "G", "T", step.queue, offset, max_msg_nums=32, suspend_timeout_ms=step.timeout_ms,
                    subscription=step.expression, client_id=f"pull-{i}",
                )
                outcome = broker.pull_processor.process_request(request, channel, broker_allow_suspend=True)
                assert outcome.held is not None, f"step {i}: a pull at the max offset must be held"
                for tag in step.arrivals_before_suspend:
                    arrive(step.queue, tag)
                hold_ms = step.timeout_ms if config.long_polling_enable else config.short_polling_time_ms
                held = Held(i, step, offset, clock.now_ms(), len(arrivals), hold_ms)
                helds.append(held)
                by_request[id(request)] = held
                broker.hold_service.suspend_pull_request(outcome.held)
        horizon = max([clock.now_ms()] + [h.suspended_at + h.hold_ms for h in helds])
        clock.run_until(horizon + 2 * config.hold_check_interval_ms + 1)
        for (request, response), at in zip(channel.pull_responses, channel.delivered_at, strict=True):
            held = by_request[id(request)]
            held.answers.append((at, response))
            assert response.held_ms == at - held.suspended_at, "held_ms must be the time the pull was held"
        interval = config.hold_check_interval_ms
        for held in helds:
            expected, by_match, visible = expected_answer(held, arrivals, config, start)
            note(
                f"pull #{held.index} {held.step} at offset {held.offset}, held at t={held.suspended_at - start}: "
                f"answered at {[t - start for t, _ in held.answers]}, expected t={expected - start}"
                f" ({'matching arrival' if by_match else 'deadline'})"
            )
            assert len(held.answers) == 1, f"pull #{held.index} answered {len(held.answers)} times, not once"
            answered_at, response = held.answers[0]
            # LPOLL-3: never later than timeout plus one check interval.
            assert answered_at <= held.suspended_at + held.hold_ms + interval, "answered too late"
            if by_match:
                assert response.code == ResponseCode.SUCCESS and response.messages, "woken but got no message"
            else:
                # LPOLL-2 / LPOLL-5: no early empty answer; non-matching arrivals never wake.
                assert answered_at >= held.suspended_at + held.hold_ms, "answered early without a match"
                skipped = any(
                    q == held.step.queue and off >= held.offset for _t, q, off, _ in arrivals[:visible]
                )
                want = ResponseCode.PULL_RETRY_IMMEDIATELY if skipped else ResponseCode.PULL_NOT_FOUND
                assert not response.messages and response.code == want, (
                    f"timed-out pull: {response.code.name}, expected {want.name}"
                )
            # LPOLL-4, LPOLL-6: the exact instant (listener on: the first match; off: the next check).
            assert answered_at == expected, (
                f"pull #{held.index} answered at t={answered_at - start}, expected t={expected - start}"
            )


def first_match(held: Held, arrivals: list[tuple[int, int, int, str]]) -> tuple[int, int] | None:
    """(time, index) of the first arrival the held pull may be woken by, or None."""
    sub = SubscriptionData.parse("T", held.step.expression)
    for index, (t, q, off, tag) in enumerate(arrivals):
        if q == held.step.queue and off >= held.offset and sub.matches_tag(tag):
            return t, index
    return None


def expected_answer(
    held: Held, arrivals: list[tuple[int, int, int, str]], config: BrokerConfig, start: int
) -> tuple[int, bool, int]:
    """When the held pull is due, whether a matching arrival (not the deadline) is why, and how many
    arrivals (in order) had happened when it was answered.

    Events are merged in the order the simulation runs them: at one instant the periodic check (a
    timer) runs before the schedule's next step. A check wakes a request with a matching message
    stored before it or whose deadline passed; with long polling on, every arrival in the request's
    queue notifies it, waking it on a match, or when its deadline has passed.
    """
    interval = config.hold_check_interval_ms
    deadline = held.suspended_at + held.hold_ms
    first = first_match(held, arrivals)
    if first is not None and first[1] < held.arrivals_at_suspend:
        return held.suspended_at, True, held.arrivals_at_suspend  # raced the suspend: the re-check wakes it
    sub = SubscriptionData.parse("T", held.step.expression)
    k = (held.suspended_at - start) // interval + 1  # checks run at start + k * interval
    later = [(i, a) for i, a in enumerate(arrivals) if i >= held.arrivals_at_suspend and a[1] == held.step.queue]
    while True:
        check = start + k * interval
        if config.long_polling_enable:
            for i, (t, _q, _off, tag) in later:
                if t >= check:
                    break
                if sub.matches_tag(tag):
                    return t, True, i + 1
                if t >= deadline:
                    return t, False, i + 1
        visible = sum(1 for t, *_ in arrivals if t < check)
        if first is not None and first[1] < visible:
            return check, True, visible
        if check >= deadline:
            return check, False, visible
        later = [(i, a) for i, a in later if a[0] >= check]
        k += 1


def long_poll_property(hold_cls: type[PullRequestHoldService]):
    @given(schedule=steps, config=configs)
    def prop(schedule: list[Step], config: BrokerConfig) -> None:
        run_schedule(schedule, config, hold_cls)

    return prop


@pytest.mark.req("LPOLL-1.held", "LPOLL-1.once", "LPOLL-2", "LPOLL-3", "LPOLL-4", "LPOLL-5", "LPOLL-6", "LPOLL-7")
def test_long_poll_wakeup_property() -> None:
    long_poll_property(PullRequestHoldService)()
