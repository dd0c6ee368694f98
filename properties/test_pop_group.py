"""A simulated POP group (reference.sim.pop_sim): push consumers over POP with crashes, slow acks,
failing listeners, producer bursts and broker restarts, sharing queues by popShareQueueNum.

The oracle is :func:`reference.sim.judges.audit_pop` over the whole trace: nothing lost (at least
once, REVIVE-7), no early redelivery, nothing redelivered or revived after its ack, and every
redelivery attributed to an expired invisibility (a REVIVE after the previous delivery's
invisibility ended, with reconsume times + 1).
"""

from __future__ import annotations

import collections

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from reference.sim.judges import POP_EVENTS
from reference.sim.pop_sim import PopSimConfig, PopSimResult, run, slow_consume_choices
from reference.sim.steps import BrokerRestart, Crash, FailNext, Produce, SlowConsumer
from reference.sim.timeline import format_timeline

SPAN_MS = 120_000
CONSUMERS = 4


def schedules(config: PopSimConfig) -> st.SearchStrategy[list]:
    """Producer bursts (at least one), and faults: crashes, slow acks, failing listeners, restarts."""
    at = st.integers(0, SPAN_MS)
    consumer = st.integers(0, config.consumers - 1)
    bursts = st.lists(st.builds(Produce, count=st.integers(1, 10), queue=st.integers(0, config.queues - 1), at_ms=at),
                      min_size=1, max_size=6)
    faults = st.lists(
        st.one_of(
            st.builds(Crash, consumer, st.sampled_from((0, 5_000, 30_000)), at_ms=at),
            st.builds(SlowConsumer, consumer, st.sampled_from(slow_consume_choices(config)),
                      st.sampled_from((10_000, 60_000)), at_ms=at),
            st.builds(FailNext, consumer, st.integers(1, 3), at_ms=at),
            st.builds(BrokerRestart, down_ms=st.sampled_from((0, 2_000)), at_ms=at),
        ),
        max_size=10,
    )
    return st.tuples(bursts, faults).map(lambda pair: sorted(pair[0] + pair[1], key=lambda e: e.at_ms))


def check(schedule: list, config: PopSimConfig) -> PopSimResult:
    result = run(schedule, config)
    if result.findings:
        note("findings:\n" + "\n".join(str(f) for f in result.findings[:10]))
        about = {f.msg_id for f in result.findings[:3] if f.msg_id}
        note("timeline:\n" + format_timeline(result.rows, msg_id=about, events=POP_EVENTS))
    assert result.finished, f"the group acknowledged {len(result.acked)} of {len(result.sent)} messages"
    assert not result.findings, f"{len(result.findings)} findings, first: {result.findings[0]}"
    return result


@pytest.mark.req("REVIVE-7.crash-slow", "REVIVE-7.retry", "PACK-1", "PACK-3", "REVIVE-2.copy")
def test_pop_group_of_4_loses_nothing_over_200_schedules() -> None:
    """200 schedules of 4 consumers; shared queues (popShareQueueNum 1, 2) and all-queue pops (-1, 0).

    Besides each schedule's audit, the totals show that the faults bite and that every redelivery
    is a revived copy: as many pops of revived copies (reconsume times > 0) as revives.
    """
    totals: collections.Counter[str] = collections.Counter()

    @settings(max_examples=200)
    @given(data=st.data(), share=st.sampled_from((-1, 0, 1, 2)), seed=st.integers(0, 3))
    def one_schedule(data: st.DataObject, share: int, seed: int) -> None:
        config = PopSimConfig(consumers=CONSUMERS, queues=4, pop_share_queue_num=share, seed=seed)
        result = check(data.draw(schedules(config), label="schedule"), config)
        totals["schedules"] += 1
        totals["sent"] += len(result.sent)
        for r in result.rows:
            if r["event"] == "POP" and r["reconsume_times"] > 0:
                totals["redelivered"] += 1
            elif r["event"] in ("REVIVE", "CRASH", "CHANGE_INVISIBLE"):
                totals[r["event"]] += 1

    one_schedule()
    print(f"\nPOP group: {dict(totals)}")
    assert totals["schedules"] >= 200 and totals["CRASH"] and totals["CHANGE_INVISIBLE"]
    assert totals["redelivered"] > 0 and totals["redelivered"] == totals["REVIVE"], totals
