"""The correction rows and the retention guarantees, one pull at a time, against oracles written from
the spec sentences (OFFSET-1..5, RETAIN-1, RETAIN-7, RETAIN-11, RETAIN-12).

Quicker to shrink than the full store machine in ``test_offset_correction``: a queue is filled,
aged, filled again and cleaned once; then pulls at offsets around min and max are checked. The
seeded faults of the store are killed here in seconds, with a short counterexample.
"""

from __future__ import annotations

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from conformance.suite.support import expected_correction
from properties.harness import sim_broker
from reference.broker.broker import BrokerComponents
from reference.broker.protocol import PullMessageRequest, PullSysFlag, RecordingChannel
from reference.store.message import Message
from reference.store.store import MessageStore

MINUTE_MS = 60_000
#: fileReservedTime shortened to 1 h for the property (the rule is the same at 72 h).
RESERVED_MIN = 60
#: Segments of 16 KiB hold about 70 of the 200-byte messages below.
STORE = dict(commit_log_segment_bytes=16 * 1024, file_reserved_time_hours=1, consume_queue_units_per_segment=64)
BODY = b"m" * 200


def correction_property(store_cls: type[MessageStore]):  # type: ignore[no-untyped-def]
    @given(
        old=st.integers(0, 300), age_minutes=st.sampled_from([0, RESERVED_MIN - 5, RESERVED_MIN + 5]),
        young=st.integers(0, 20), probes=st.lists(st.integers(-3, 3), min_size=1, max_size=6),
    )
    def prop(old: int, age_minutes: int, young: int, probes: list[int]) -> None:
        components = BrokerComponents(message_store=store_cls)
        with sim_broker(components=components, topics={"T": 1}, **STORE) as (b, clock, _):
            for _ in range(old):
                b.send(Message("T", BODY, 0, tags="A"))
            clock.advance(age_minutes * MINUTE_MS)
            for _ in range(young):
                b.send(Message("T", BODY, 0, tags="A"))
            b.run_retention(manual=True)
            lo, hi = b.store.get_min_offset_in_queue("T", 0), b.store.get_max_offset_in_queue("T", 0)
            note(f"{old} old messages, aged {age_minutes} min, {young} young; retention left [{lo}, {hi})")
            assert hi == old + young
            if age_minutes < RESERVED_MIN:
                assert lo == 0, "RETAIN-1: nothing younger than fileReservedTime is deleted"
            if age_minutes > RESERVED_MIN and young and old >= 150:
                # The old messages fill at least two 16 KiB segments, the first of them entirely.
                assert lo > 0, "RETAIN-7: after deletion the min offset rises to the first message kept"
            assert lo <= old or old == 0, "RETAIN-1: a young message was deleted"
            for delta in probes:
                for anchor in (lo, hi):
                    offset = max(0, anchor + delta)
                    flag = int(PullSysFlag.SUBSCRIPTION)
                    r = b.pull(PullMessageRequest("G", "T", 0, offset, sys_flag=flag, subscription="*"),
                               RecordingChannel("c"))
                    assert r is not None
                    want = expected_correction(offset, lo, hi)
                    note(f"pull at {offset}: {r.status.name} -> {r.next_begin_offset}")
                    if want is None:
                        assert r.status.name == "FOUND" and r.messages[0].queue_offset == offset
                    else:
                        assert (r.status.name, r.next_begin_offset) == want, f"pull at {offset} in [{lo}, {hi})"

    return prop


@pytest.mark.req("OFFSET-1", "OFFSET-2", "OFFSET-3", "OFFSET-4", "OFFSET-5", "RETAIN-1", "RETAIN-7", "RETAIN-11",
                 "RETAIN-12")
def test_correction_rows_and_retention() -> None:
    correction_property(MessageStore)()
