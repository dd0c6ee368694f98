"""The pull processor and the query-offset rule against oracles written from the spec sentences
(PULL-1, PULL-4, QOFF-11..13), on simulated time.

* Response codes: every pull's code is looked up in :data:`SPEC_CODES`, a table typed from PULL-1's
  sentence, not imported from the reference.
* Commit piggyback: a held pull carrying a commit offset stores it once, when first processed; a
  commit made while it is held survives the wake-up.
* Query offset: with no commit, 0 exactly when the queue's min offset is 0 and offset 0 is hot.
"""

from __future__ import annotations

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from properties.harness import sim_broker
from reference.broker.broker import BrokerComponents
from reference.broker.consumer_manage_processor import ConsumerManageProcessor
from reference.broker.protocol import PullMessageRequest, PullSysFlag, RecordingChannel
from reference.broker.pull_processor import PullMessageProcessor
from reference.store.message import Message

#: PULL-1, as written: GetMessageStatus -> response code (NO_MESSAGE_IN_QUEUE at offset 0 aside).
SPEC_CODES = {
    "FOUND": "SUCCESS",
    "NO_MATCHED_MESSAGE": "PULL_RETRY_IMMEDIATELY",
    "MESSAGE_WAS_REMOVING": "PULL_RETRY_IMMEDIATELY",
    "OFFSET_OVERFLOW_ONE": "PULL_NOT_FOUND",
    "OFFSET_FOUND_NULL": "PULL_NOT_FOUND",
    "OFFSET_TOO_SMALL": "PULL_OFFSET_MOVED",
    "OFFSET_OVERFLOW_BADLY": "PULL_OFFSET_MOVED",
    "NO_MESSAGE_IN_QUEUE": "PULL_OFFSET_MOVED",
}
TAGS = ("A", "B", "C")
EXPRESSIONS = ("*", "A", "B||C", "Z")
MINUTE_MS = 60_000


def _request(offset: int, expression: str = "*", suspend_ms: int = 0, commit: int | None = None) -> PullMessageRequest:
    flag = PullSysFlag.SUBSCRIPTION
    if suspend_ms:
        flag |= PullSysFlag.SUSPEND
    if commit is not None:
        flag |= PullSysFlag.COMMIT_OFFSET
    return PullMessageRequest("G", "T", 0, offset, sys_flag=int(flag), commit_offset=commit or 0,
                              suspend_timeout_ms=suspend_ms, subscription=expression)


def pull_code_property(processor_cls: type[PullMessageProcessor]):  # type: ignore[no-untyped-def]
    @given(
        tags=st.lists(st.sampled_from(TAGS), max_size=12),
        pulls=st.lists(st.tuples(st.integers(0, 15), st.sampled_from(EXPRESSIONS)), min_size=1, max_size=8),
    )
    def prop(tags: list[str], pulls: list[tuple[int, str]]) -> None:
        with sim_broker(components=BrokerComponents(pull_processor=processor_cls), topics={"T": 1}) as (b, _, _):
            for tag in tags:
                b.send(Message("T", b"x", 0, tags=tag))
            for offset, expression in pulls:
                r = b.pull(_request(offset, expression), RecordingChannel("c"))
                assert r is not None
                status = r.status.name
                want = "PULL_NOT_FOUND" if status == "NO_MESSAGE_IN_QUEUE" and offset == 0 else SPEC_CODES[status]
                note(f"pull at {offset} with {expression!r} over {tags}: {status} -> {r.code.name}")
                assert r.code.name == want, f"PULL-1: {status} at offset {offset} must answer {want}"

    return prop


def commit_piggyback_property(processor_cls: type[PullMessageProcessor]):  # type: ignore[no-untyped-def]
    @given(
        piggyback=st.integers(0, 5), later=st.integers(0, 9), wait_ms=st.integers(0, 20_000),
        arrives=st.booleans(),
    )
    def prop(piggyback: int, later: int, wait_ms: int, arrives: bool) -> None:
        with sim_broker(components=BrokerComponents(pull_processor=processor_cls), topics={"T": 1}) as (b, clock, _):
            channel = RecordingChannel("c")
            assert b.pull(_request(0, suspend_ms=15_000, commit=piggyback), channel) is None, "held"
            assert b.query_consumer_offset("G", "T", 0).offset == piggyback, "PULL-4: stored at first processing"
            b.update_consumer_offset("G", "T", 0, later)
            clock.advance(wait_ms)
            if arrives:
                b.send(Message("T", b"x", 0, tags="A"))
            clock.advance(25_000)
            note(f"held with commit {piggyback}, committed {later}, waited {wait_ms} ms, arrival={arrives}")
            assert len(channel.pull_responses) == 1, "answered exactly once"
            assert b.query_consumer_offset("G", "T", 0).offset == later, "PULL-4: the wake-up committed again"

    return prop


def query_offset_property(processor_cls: type[ConsumerManageProcessor]):  # type: ignore[no-untyped-def]
    @given(
        first=st.integers(0, 400), age_minutes=st.sampled_from([0, 50, 70]), then=st.integers(0, 30),
        commit=st.one_of(st.none(), st.integers(0, 1_000)),
    )
    def prop(first: int, age_minutes: int, then: int, commit: int | None) -> None:
        components = BrokerComponents(consumer_manage_processor=processor_cls)
        # Retention after 1 h instead of 72 h: the same rule with fewer periodic ticks to simulate.
        store = dict(commit_log_segment_bytes=16 * 1024, file_reserved_time_hours=1)
        with sim_broker(components=components, topics={"T": 1}, **store) as (b, clock, _):
            for _ in range(first):
                b.send(Message("T", b"m" * 100, 0, tags="A"))
            clock.advance(age_minutes * MINUTE_MS)
            for _ in range(then):
                b.send(Message("T", b"m" * 100, 0, tags="A"))
            b.run_retention(manual=True)
            if commit is not None:
                b.update_consumer_offset("G", "T", 0, commit)
            lo = b.store.get_min_offset_in_queue("T", 0)
            hot = not b.store.check_in_disk_by_consume_offset("T", 0, 0)
            r = b.query_consumer_offset("G", "T", 0)
            note(f"min {lo}, offset 0 hot: {hot}, commit {commit}: {r}")
            if commit is not None:
                assert (r.code.name, r.offset) == ("SUCCESS", commit), "QOFF-11"
            elif lo == 0 and hot:
                assert (r.code.name, r.offset) == ("SUCCESS", 0), "QOFF-12"
            else:
                assert (r.code.name, r.offset) == ("QUERY_NOT_FOUND", -1), "QOFF-13"

    return prop


@pytest.mark.req("PULL-1")
def test_response_codes_follow_the_spec_table() -> None:
    pull_code_property(PullMessageProcessor)()


@pytest.mark.req("PULL-4")
def test_held_pull_commits_once() -> None:
    commit_piggyback_property(PullMessageProcessor)()


@pytest.mark.req("QOFF-11", "QOFF-12", "QOFF-13.min-above-zero")
def test_query_offset_rule() -> None:
    query_offset_property(ConsumerManageProcessor)()
