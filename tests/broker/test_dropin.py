"""Delay levels on send, transactions and topic permissions in the broker core, on simulated time (issue 41)."""

from __future__ import annotations

import json
import tempfile

import pytest

from properties.harness import sim_broker
from reference.broker.broker import Broker
from reference.broker.transaction import (
    HALF_TOPIC,
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
)
from reference.clock import SimClock
from reference.rules.errors import InvalidRequest
from reference.rules.topics import SCHEDULE_TOPIC
from reference.store.message import Message, PutMessageResult, StoredMessage


def visible(broker: Broker, topic: str = "T", queue_id: int = 0) -> list[bytes]:
    return [m.body for m in broker.store.get_message("G", topic, queue_id, 0, 32, None).messages]


# -- delay levels --------------------------------------------------------------------------------------------
@pytest.mark.req("DELAY-1")
def test_a_level_three_message_arrives_ten_seconds_after_its_send_not_before() -> None:
    with sim_broker() as (broker, clock, sink):
        broker.send(Message("T", b"later", 1, tags="A", properties={"DELAY": "3", "k": "v", "UNIQ_KEY": "U1"}))
        assert visible(broker, queue_id=1) == []
        clock.advance(9_999)
        assert visible(broker, queue_id=1) == [], "delivered before level 3's 10 s"
        clock.advance(1)
        (got,) = broker.store.get_message("G", "T", 1, 0, 32, None).messages
        assert (got.body, got.tags, got.properties.get("k"), got.unique_id) == (b"later", "A", "v", "U1")
        assert "DELAY" not in got.properties and "REAL_TOPIC" not in got.properties
        (send,) = sink.of("SEND")
        assert send["topic"] == SCHEDULE_TOPIC and json.loads(send["detail"])["real_topic"] == "T"


@pytest.mark.req("DELAY-1")
def test_a_level_above_eighteen_waits_two_hours_and_level_zero_none() -> None:
    with sim_broker() as (broker, clock, _):
        broker.send(Message("T", b"max", 0, properties={"DELAY": "99"}))
        broker.send(Message("T", b"now", 1, properties={"DELAY": "0"}))
        assert visible(broker, queue_id=1) == [b"now"]
        clock.advance(2 * 3_600_000 - 1)
        assert visible(broker) == []
        clock.advance(1)
        assert visible(broker) == [b"max"]


def test_a_delay_that_is_not_a_number_is_refused_naming_the_property() -> None:
    with sim_broker() as (broker, _, _), pytest.raises(InvalidRequest, match=r"properties\.DELAY: must be an integer"):
        broker.send(Message("T", b"x", 0, properties={"DELAY": "soon"}))


# -- transactions --------------------------------------------------------------------------------------------
def half(broker: Broker, body: bytes, group: str = "P") -> PutMessageResult:
    return broker.send(Message("T", body, 0, properties={"TRAN_MSG": "true", "PGROUP": group, "UNIQ_KEY": body.hex()}))


@pytest.mark.req("TXN-1")
def test_a_half_is_invisible_until_committed_and_a_rollback_never_arrives() -> None:
    with sim_broker() as (broker, _, sink):
        kept, dropped = half(broker, b"kept"), half(broker, b"dropped")
        assert visible(broker) == [] and sink.of("SEND") == []
        tx = broker.transactions
        assert tx.end("P", dropped.commit_log_offset, dropped.queue_offset, TRANSACTION_ROLLBACK_TYPE).ok
        assert tx.end("P", kept.commit_log_offset, kept.queue_offset, TRANSACTION_COMMIT_TYPE).ok
        (got,) = broker.store.get_message("G", "T", 0, 0, 32, None).messages
        assert got.body == b"kept" and "TRAN_MSG" not in got.properties and got.unique_id == b"kept".hex()
        assert [row["topic"] for row in sink.of("SEND")] == ["T"], "the commit is traced as the send"
        again = tx.end("P", kept.commit_log_offset, kept.queue_offset, TRANSACTION_COMMIT_TYPE)
        assert not again.ok and "already ended" in again.remark and visible(broker) == [b"kept"]


def test_an_end_that_names_another_group_or_offset_is_refused_with_upstreams_remark() -> None:
    with sim_broker() as (broker, _, _):
        h, tx = half(broker, b"h"), broker.transactions
        wrong_group = tx.end("Q", h.commit_log_offset, h.queue_offset, TRANSACTION_COMMIT_TYPE)
        assert wrong_group.remark == "The producer group wrong"
        assert tx.end("P", h.commit_log_offset, 7, TRANSACTION_COMMIT_TYPE).remark == (
            "The transaction state table offset wrong")
        assert tx.end("P", 1 << 40, 0, TRANSACTION_COMMIT_TYPE).remark == "Find prepared transaction message failed"
        with pytest.raises(InvalidRequest, match="commitOrRollback"):
            tx.end("P", h.commit_log_offset, h.queue_offset, 5)
        assert visible(broker) == []


@pytest.mark.req("TXN-2.checked", "TXN-2.max")
def test_an_unended_half_is_checked_after_its_timeout_at_each_interval_then_discarded() -> None:
    with sim_broker() as (broker, clock, _):
        asked: list[tuple[str, StoredMessage]] = []
        broker.transactions.checker = lambda group, msg: asked.append((group, msg)) is None
        h = half(broker, b"h")
        clock.advance(60_000)  # the first round: the half is 60 s old, over the 6 s timeout
        assert [(g, m.topic, m.queue_offset, m.commit_log_offset) for g, m in asked] == [
            ("P", "T", h.queue_offset, h.commit_log_offset)]
        assert asked[0][1].properties["TRAN_MSG"] == "true" and "REAL_TOPIC" not in asked[0][1].properties
        clock.advance(60_000 * 20)
        assert len(asked) == 15, "checked transactionCheckMax times, then discarded"
        assert visible(broker) == [] and broker.transactions.is_done(h.queue_offset)


@pytest.mark.req("TXN-2.checked")
def test_a_half_younger_than_the_timeout_waits_for_the_next_round() -> None:
    with sim_broker() as (broker, clock, _):
        asked: list[int] = []
        broker.transactions.checker = lambda group, msg: asked.append(msg.queue_offset) is None
        clock.advance(57_000)
        h = half(broker, b"young")
        clock.advance(3_000)  # the round at 60 s: 3 s old
        assert asked == []
        clock.advance(60_000)
        assert asked == [h.queue_offset]


def test_an_ended_half_stays_ended_after_a_restart() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        clock = SimClock()
        broker = Broker(tmp, clock)
        broker.create_topic("T", 1)
        broker.start()
        h = half(broker, b"h")
        assert broker.transactions.end("P", h.commit_log_offset, h.queue_offset, TRANSACTION_ROLLBACK_TYPE).ok
        broker.shutdown()
        again = Broker(tmp, clock)
        assert again.transactions.is_done(h.queue_offset)
        assert HALF_TOPIC in again.store.topics()
        again.shutdown()


# -- permissions ---------------------------------------------------------------------------------------------
@pytest.mark.req("PERM-2")
def test_a_topic_without_write_refuses_sends_with_no_permission_and_keeps_it_after_a_restart() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        broker = Broker(tmp, SimClock())
        broker.create_topic("T", 1)
        broker.topic_perms.set("T", 4)
        with pytest.raises(InvalidRequest) as refused:
            broker.send(Message("T", b"x", 0))
        assert refused.value.code == "NO_PERMISSION"
        assert "the topic[T] sending message is forbidden" in str(refused.value)
        broker.shutdown()
        again = Broker(tmp, SimClock())
        assert again.topic_perms.get("T") == 4
        again.topic_perms.set("T", 6)
        assert again.send(Message("T", b"x", 0)).queue_offset == 0
        again.shutdown()


def test_a_perm_other_than_2_4_or_6_is_refused() -> None:
    with sim_broker() as (broker, _, _), pytest.raises(InvalidRequest, match="perm: must be one of"):
        broker.topic_perms.set("T", 7)
