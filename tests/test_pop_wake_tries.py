"""POP-12's wire test against a broker that loses wake-ups: the branch a real broker takes only now and then
(RocketMQ 5.5.0 answers a held pop at its deadline once in a while), so it is run here on purpose.

The broker is a scripted stand-in for the wire: it answers a held pop when a matching message arrives, except for
the first ``lost`` held pops, which it answers only when their result is asked for (at the deadline)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from conformance.suite import support
from conformance.suite import test_pop_conformance as pop_suite
from conformance.targets import PoppedRecord, PopReply


@dataclass
class _Held:
    poll_ms: int = 0
    waited_ms: int = 0
    reply: PopReply | None = None
    late: PopReply | None = None

    def done(self) -> bool:
        return self.reply is not None

    def result(self) -> PopReply:
        answer = self.reply or self.late
        assert answer is not None, "no answer by the deadline"
        return answer


@dataclass
class LosingBroker:
    """Loses the wake-up of the first ``lost`` held pops; never wakes any when ``lost`` is None."""

    lost: int | None
    capabilities: frozenset[str] = frozenset({"pop"})
    held: list[tuple[str, _Held]] = field(default_factory=list)
    pops: int = 0

    def create_topic(self, topic: str, queues: int) -> None:
        pass

    def advance(self, ms: int) -> None:
        for _, pending in self.held:
            pending.waited_ms += ms
            if not pending.done() and pending.late is None and pending.waited_ms >= pending.poll_ms:
                pending.reply = PopReply("POLLING_TIMEOUT")

    def pop(self, group, topic, queue_id, max_nums, invisible_ms, poll_ms, expression="*"):  # type: ignore[no-untyped-def]
        if poll_ms == 0:
            return _Held(reply=PopReply("POLLING_TIMEOUT"))
        pending = _Held(poll_ms)
        self.held.append((topic, pending))
        return pending

    def send(self, topic: str, queue_id: int, body: bytes, tags: str) -> None:
        if tags != "A":
            return
        for held_topic, pending in self.held:
            if held_topic != topic or pending.done():
                continue
            reply = PopReply("SUCCESS", (PoppedRecord(topic, queue_id, 1, body, tags, "m", "h", 0, False),))
            self.pops += 1
            if self.lost is None or self.pops <= self.lost:
                pending.late = reply  # the scan answers it at its deadline
            else:
                pending.reply = reply


class Properties(list):
    def __call__(self, name: str, value: object) -> None:
        self.append((name, value))


@pytest.fixture(autouse=True)
def _short_wake_window(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(support, "WIRE_WAKE_S", 0.01)


@pytest.mark.req("POP-12")
def test_a_lost_wake_up_fails_and_is_recorded() -> None:
    """No second chance: a tolerated miss would be a pass that hides it (it is an intermittent expectation)."""
    recorded = Properties()
    with pytest.raises(AssertionError, match="must answer the held pop at once"):
        pop_suite.test_held_pop_answered_by_a_matching_arrival(LosingBroker(1), recorded)
    [(name, misses)] = recorded
    assert name == "pop.lost_wakeups" and len(misses) == 1
    assert "answered" in misses[0] and "SUCCESS, 1 messages" in misses[0], misses


@pytest.mark.req("POP-12")
def test_a_broker_that_wakes_the_held_pop_passes() -> None:
    recorded = Properties()
    pop_suite.test_held_pop_answered_by_a_matching_arrival(LosingBroker(0), recorded)
    assert recorded == []


@pytest.mark.req("POP-12")
def test_a_broker_that_never_wakes_a_held_pop_fails() -> None:
    with pytest.raises(AssertionError, match="must answer the held pop at once"):
        pop_suite.test_held_pop_answered_by_a_matching_arrival(LosingBroker(None), Properties())
