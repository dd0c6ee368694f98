"""Broker pull path details not reachable through the Target interface."""

from __future__ import annotations

import pytest

from properties.harness import sim_broker
from reference.broker.config import BrokerConfig
from reference.broker.protocol import PullMessageRequest, PullSysFlag, RecordingChannel
from reference.rules.codes import ResponseCode
from reference.rules.errors import InvalidRequest
from reference.store.message import Message

FLAGS = int(PullSysFlag.SUSPEND | PullSysFlag.SUBSCRIPTION | PullSysFlag.COMMIT_OFFSET)


@pytest.mark.req("PULL-4", "LPOLL-7")
def test_woken_request_does_not_commit_again() -> None:
    with sim_broker() as (broker, clock, sink):
        ch = RecordingChannel("c")
        broker.update_consumer_offset("G", "T", 0, 0)
        req = PullMessageRequest("G", "T", 0, 0, sys_flag=FLAGS, commit_offset=0, suspend_timeout_ms=15_000,
                                 client_id="c1")
        assert broker.pull(req, ch) is None
        broker.update_consumer_offset("G", "T", 0, 7)  # someone else moves the offset meanwhile
        broker.send(Message("T", b"x", 0, tags="A"))
        assert len(ch.pull_responses) == 1 and ch.pull_responses[0][1].code == ResponseCode.SUCCESS
        assert broker.offsets.query_offset("G", "T", 0) == 7, "re-execution after wake-up committed again"
        assert [r["offset"] for r in sink.of("COMMIT")] == [0, 0, 7]


@pytest.mark.req("LPOLL-6")
def test_short_polling_waits_for_the_check() -> None:
    config = BrokerConfig(long_polling_enable=False, short_polling_time_ms=1_000)
    with sim_broker(config) as (broker, clock, _):
        ch = RecordingChannel("c")
        req = PullMessageRequest("G", "T", 0, 0, suspend_timeout_ms=15_000)
        clock.advance(200)
        assert broker.pull(req, ch) is None
        broker.send(Message("T", b"x", 0, tags="A"))
        assert ch.pull_responses == [], "no arrival listener when long polling is off"
        clock.advance(799)
        assert ch.pull_responses == []
        clock.advance(1)
        (_, resp), = ch.pull_responses
        assert resp.code == ResponseCode.SUCCESS and resp.held_ms == 800


@pytest.mark.req("TRACE-2", "INPUT-1")
def test_broker_records_accepted_operations_only() -> None:
    with sim_broker() as (broker, clock, sink):
        ch = RecordingChannel("conn-1")
        from reference.broker.protocol import ConsumerData
        from reference.rules.filter import SubscriptionData

        broker.heartbeat(ch, "client-1", [ConsumerData("G", (SubscriptionData.parse("T", "A"),))])
        broker.send(Message("T", b"a", 0, tags="A"))
        before = len(sink.rows)
        for bad in (
            PullMessageRequest("G", "T", 0, -1),
            PullMessageRequest("G", "T", 5, 0),
            PullMessageRequest("G", "NOPE", 0, 0),
            PullMessageRequest("G", "T", 0, 0, max_msg_nums=0),
            PullMessageRequest("G", "T", 0, 0, subscription="||"),
        ):
            with pytest.raises(InvalidRequest):
                broker.pull(bad, ch)
        assert len(sink.rows) == before and broker.hold_service.held_count() == 0
        resp = broker.pull(PullMessageRequest("G", "T", 0, 0, client_id=""), ch)
        assert resp is not None and resp.code == ResponseCode.SUCCESS
        assert broker.pull(PullMessageRequest("G", "T", 0, 1, suspend_timeout_ms=2_000), ch) is None
        clock.advance(10_000)
        broker.unregister_client(ch, "G")
        kinds = [r["event"] for r in sink.rows]
        assert kinds == ["SUBSCRIBE", "SEND", "PULL_REQ", "PULL_RESP", "PULL_REQ", "PULL_RESP", "UNSUBSCRIBE"]
        held = sink.rows[5]
        assert held["held_ms"] == 5_000 and held["status"] == "OFFSET_OVERFLOW_ONE"
        assert sink.rows[2]["client_id"] == "client-1", "client id comes from the channel's heartbeat"
        assert sink.rows[4]["suspend_ms"] == 2_000
