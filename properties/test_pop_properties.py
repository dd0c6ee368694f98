"""POP invisibility, ack and revive on simulated time: random step sequences against one broker.

A schedule is a list of steps (send, pop with or without long polling, ack, change of invisible
time, wait, broker restart). After it, a *drain* pops and acks everything until every message sent
was acknowledged, then waits long enough for a wrong revive to show. The whole trace is audited by
:func:`reference.sim.judges.audit_pop`, which is the oracle:

* no delivery to the group before the previous delivery's invisibility ended, counted from its POP
  row, as replaced by a later change of invisible time (PACK-1, PACK-4);
* no delivery and no revive after a successful ack (PACK-3, REVIVE-3);
* every redelivery follows a revive after the invisibility ended, and carries reconsume times + 1
  (REVIVE-2, REVIVE-5);
* nothing is lost (every message is eventually acknowledged), also across restarts (REVIVE-6), and
  checkpoints that differ only in pop time stay apart (PACK-6).

A failure prints the shrunk steps and the timeline of the messages concerned.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from properties.harness import SMALL_STORE
from reference.broker.broker import Broker, BrokerComponents
from reference.broker.pop.protocol import PopMessageRequest, PoppedMessage, RecordingPopChannel
from reference.clock import SimClock
from reference.rules.errors import InvalidRequest
from reference.sim.engine import scratch_dir
from reference.sim.judges import POP_EVENTS, audit_pop
from reference.sim.pop_sim import TrackingSink
from reference.sim.timeline import format_timeline
from reference.store.config import MessageStoreConfig
from reference.store.message import Message
from reference.trace import Trace

G, T, QUEUES = "G", "T", 2


@dataclass(frozen=True)
class Send:
    queue: int
    count: int


@dataclass(frozen=True)
class Pop:
    queue: int
    max_nums: int
    invisible_ms: int
    poll_ms: int


@dataclass(frozen=True)
class Ack:
    pick: int


@dataclass(frozen=True)
class Change:
    pick: int
    invisible_ms: int


@dataclass(frozen=True)
class Wait:
    ms: int


@dataclass(frozen=True)
class Restart:
    pass


Step = Send | Pop | Ack | Change | Wait | Restart

steps = st.lists(
    st.one_of(
        st.builds(Send, st.integers(0, QUEUES - 1), st.integers(1, 3)),
        st.builds(
            Pop, st.sampled_from((-1, 0, 1)), st.integers(1, 4), st.sampled_from((3_000, 5_000, 8_000, 12_000)),
            st.sampled_from((0, 10_000, 20_000)),
        ),
        st.builds(Ack, st.integers(0, 7)),
        st.builds(Change, st.integers(0, 7), st.sampled_from((2_000, 6_000, 15_000))),
        st.builds(Wait, st.sampled_from((500, 2_000, 3_500, 5_500, 7_500, 9_500)) | st.integers(0, 20_000)),
        st.just(Restart()),
    ),
    min_size=1,
    max_size=25,
)

#: How long the drain may take, how long its consumer holds a batch before acking it, and how long
#: it then waits for a wrong revive (longer than any invisible time a schedule uses, plus 2 s).
DRAIN_MS = 150_000
DRAIN_STEP_MS = 3_000
TAIL_MS = 30_000


class Run:
    """One broker (restartable) in a throw-away directory, and the deliveries it handed out."""

    def __init__(self, tmp: str, components: BrokerComponents | None) -> None:
        self.tmp = tmp
        self.components = components
        self.clock = SimClock()
        self.start = self.clock.now_ms()
        self.sink = TrackingSink()
        self.trace = Trace(self.sink, "pop-prop", self.clock)
        self.channel = RecordingPopChannel("c")
        self.seen = 0
        self.outstanding: list[PoppedMessage] = []
        self.broker = self._open()
        self.broker.create_topic(T, QUEUES)

    def _open(self) -> Broker:
        broker = Broker(self.tmp, self.clock, store_config=MessageStoreConfig(**SMALL_STORE), trace=self.trace,
                        components=self.components)
        broker.start()
        return broker

    def collect(self) -> None:
        """Take the answers of held pops that arrived meanwhile."""
        for _request, response in self.channel.pop_responses[self.seen:]:
            self.outstanding.extend(response.messages)
        self.seen = len(self.channel.pop_responses)

    def pop(self, queue: int, max_nums: int, invisible_ms: int, poll_ms: int) -> None:
        request = PopMessageRequest(G, T, queue, max_nums, invisible_ms, poll_ms, "*", "prop")
        response = self.broker.pop(request, self.channel)
        if response is not None:
            self.outstanding.extend(response.messages)

    def step(self, step: Step) -> None:
        if isinstance(step, Send):
            for _ in range(step.count):
                self.broker.send(Message(T, b"x", step.queue, tags="A"))
        elif isinstance(step, Pop):
            self.pop(step.queue, step.max_nums, step.invisible_ms, step.poll_ms)
        elif isinstance(step, Ack | Change) and self.outstanding:
            message = self.outstanding.pop(step.pick % len(self.outstanding))
            try:
                if isinstance(step, Ack):
                    self.broker.ack(G, T, message.handle, "prop")
                else:
                    result = self.broker.change_invisible_time(G, T, message.handle, step.invisible_ms, "prop")
                    self.outstanding.append(PoppedMessage(**{**message.__dict__, "handle": result.handle}))
            except InvalidRequest as exc:
                # Only a handle that expired (its message was revived) may be refused.
                assert exc.code == "INVALID_RECEIPT_HANDLE", exc
        elif isinstance(step, Wait):
            self.clock.advance(step.ms)
        elif isinstance(step, Restart):
            self.broker.shutdown()
            self.broker = self._open()
            self.channel = RecordingPopChannel("c")  # held pops die with the broker
            self.seen = 0
        self.collect()

    def drain(self) -> None:
        """Consume everything like a consumer that takes three seconds per batch: wait, ack what it
        holds, pop again, until every message sent was acknowledged (bounded); then wait for wrong
        revives."""
        waited = 0
        while waited < DRAIN_MS:
            self.clock.advance(DRAIN_STEP_MS)
            waited += DRAIN_STEP_MS
            self.collect()
            for message in self.outstanding:
                with contextlib.suppress(InvalidRequest):  # an expired handle: acked when it comes back
                    self.broker.ack(G, T, message.handle, "prop")
            self.outstanding.clear()
            if self.sink.sent <= self.sink.acked:
                break
            self.pop(-1, 32, 60_000, 0)
        self.clock.advance(TAIL_MS)
        self.broker.shutdown()
        self.trace.end()  # END rows: the horizon the audit measures "lost" and "never revived" against


def run_schedule(schedule: list[Step], components: BrokerComponents | None = None) -> None:
    with scratch_dir("mqtck-popprop-") as tmp:
        run = Run(tmp, components)
        for step in schedule:
            run.step(step)
        run.drain()
        findings = audit_pop(run.sink.rows, G, settle_ms=TAIL_MS)
        if findings:
            note("findings:\n" + "\n".join(str(f) for f in findings[:10]))
            about = {f.msg_id for f in findings[:3] if f.msg_id}
            note("timeline:\n" + format_timeline(run.sink.rows, msg_id=about, events=POP_EVENTS))
        assert not findings, f"{len(findings)} POP violations, first: {findings[0]}"


def pop_broker_property(components: BrokerComponents | None = None):  # type: ignore[no-untyped-def]
    @given(schedule=steps)
    def prop(schedule: list[Step]) -> None:
        run_schedule(schedule, components)

    return prop


@pytest.mark.req("PACK-1", "PACK-3", "PACK-4", "PACK-6", "REVIVE-2.copy", "REVIVE-3", "REVIVE-5.popped", "REVIVE-6")
def test_pop_invisibility_ack_and_revive_property() -> None:
    # Cheap (a few ms per schedule in RAM): more schedules than the ci profile's 60.
    settings(max_examples=200)(pop_broker_property())()
