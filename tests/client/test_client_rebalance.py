"""Rebalance (seed 001 §3-4): when it runs, how queues are shared, dropping, and where queues start."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from reference.allocation.message_queue import MessageQueue
from reference.broker.protocol import QueryOffsetResult
from reference.client.client_instance import MQClientInstance
from reference.client.config import ClientConfig, ConsumeFromWhere, ConsumerConfig, MessageModel
from reference.client.gateway import GatewayError
from reference.client.offset_store import OFFSET_NOT_FOUND, OFFSET_READ_ERROR
from reference.client.process_queue import ProcessQueue
from reference.client.rebalance import RebalancePullImpl, RebalancePushImpl
from reference.clock import SimClock
from reference.rules.codes import ResponseCode
from reference.trace import NULL_TRACE

from .conftest import ClientEnv


def owned(consumer) -> set[int]:  # type: ignore[no-untyped-def]
    return {mq.queue_id for mq in consumer.owned_queues() if mq.topic == "T"}


@pytest.mark.req("REBAL-1")
def test_rebalance_at_start_on_notification_and_every_20s(env: ClientEnv) -> None:
    a = env.consumer("10.0.0.1@1")
    env.clock.advance(0)
    assert owned(a) == {0, 1, 2, 3}, "the start rebalances at once"
    rounds_at_start = a.rebalance.epoch
    b = env.consumer("10.0.0.2@2")
    env.clock.advance(1)
    assert owned(a) == {0, 1} and owned(b) == {2, 3}, "the join notification rebalances both at once"
    epoch = a.rebalance.epoch
    assert epoch > rounds_at_start
    env.clock.advance(19_000)
    assert a.rebalance.epoch == epoch
    env.clock.advance(1_100)
    assert a.rebalance.epoch == epoch + 1, "and every 20 s after the last round"
    assignments = [r for r in env.rows("ASSIGN") if r["client_id"] == "10.0.0.1@1"]
    assert [r["epoch"] for r in assignments] == sorted(r["epoch"] for r in assignments)


@pytest.mark.req("REBAL-2")
def test_members_agree_whatever_order_the_broker_sends(env: ClientEnv) -> None:
    ids = ["10.0.0.9@1", "10.0.0.10@2", "10.0.0.2@3"]
    consumers = [env.consumer(cid) for cid in ids]
    for i, consumer in enumerate(consumers):  # every member hears the member list in another order
        gateway = consumer.gateway
        original = gateway.consumer_ids
        gateway.consumer_ids = lambda group, o=original, k=i: list(reversed(o(group))) if k % 2 else o(group)
    env.clock.advance(25_000)
    shares = [owned(c) for c in consumers]
    assert sorted(q for s in shares for q in s) == [0, 1, 2, 3], f"disjoint and complete: {shares}"
    mq_all, cid_all = consumers[0].rebalance.sort_view(
        [MessageQueue("T", "b", 10), MessageQueue("T", "b", 2)], ["c", "a", "b"]
    )
    assert [mq.queue_id for mq in mq_all] == [2, 10] and cid_all == ["a", "b", "c"]


@pytest.mark.req("REBAL-3")
def test_broadcasting_consumers_own_every_queue(env: ClientEnv) -> None:
    a = env.consumer("10.0.0.1@1", message_model=MessageModel.BROADCASTING)
    b = env.consumer("10.0.0.2@2", message_model=MessageModel.BROADCASTING)
    env.clock.advance(1_000)
    assert owned(a) == owned(b) == {0, 1, 2, 3}
    assert "%RETRY%G" not in {mq.topic for mq in a.owned_queues()}, "broadcasting has no retry topic"


@pytest.mark.req("REBAL-4", "CONSUME-5")
def test_a_queue_given_away_is_persisted_then_revoked_and_never_pulled_again(env: ClientEnv) -> None:
    a = env.consumer("10.0.0.1@1")
    env.produce(8)
    env.clock.advance(1_000)
    env.consumer("10.0.0.2@2")
    env.clock.advance(30_000)
    rows = [r for r in env.sink.rows if r["source"] == "client:10.0.0.1@1"]
    revokes = [r for r in rows if r["event"] == "REVOKE"]
    assert {r["queue_id"] for r in revokes} == {2, 3}
    for revoke in revokes:
        before = [r for r in rows if r["seq"] < revoke["seq"] and r.get("queue_id") == revoke["queue_id"]]
        assert before[-1]["event"] == "COMMIT" and before[-1]["offset"] == 2, "the offset is persisted first"
        after = [r for r in rows if r["seq"] > revoke["seq"] and r.get("queue_id") == revoke["queue_id"]
                 and r.get("topic") == "T"]
        assert not [r for r in after if r["event"] in ("PULL_REQ", "COMMIT")]
    assert owned(a) == {0, 1}


@pytest.mark.req("REBAL-6")
def test_the_new_owner_starts_at_the_committed_offset(env: ClientEnv) -> None:
    a = env.consumer("10.0.0.1@1")
    env.produce(20)
    env.clock.advance(1_000)
    a.offset_store.offset_table[MessageQueue("T", "broker-a", 3)] = 4  # a stale in-memory value
    env.consumer("10.0.0.2@2")
    env.clock.advance(1_000)
    starts = {r["queue_id"]: r["offset"] for r in env.rows("ASSIGN", "10.0.0.2@2") if r["topic"] == "T"}
    assert starts == {2: 5, 3: 5}, "the broker's committed offsets (persisted by the old owner)"
    # a queue that comes back reads the broker again, not the dropped in-memory entry
    a.offset_store.offset_table[MessageQueue("T", "broker-a", 2)] = 1
    env.consumers[1].shutdown()
    env.clock.advance(1_000)
    back = [r for r in env.rows("ASSIGN", "10.0.0.1@1") if r["topic"] == "T" and r["queue_id"] in (2, 3)][-2:]
    assert {r["offset"] for r in back} == {5}


@pytest.mark.req("REBAL-7")
def test_an_idle_pull_loop_is_recreated_by_a_push_consumer(env: ClientEnv) -> None:
    a = env.consumer("10.0.0.1@1")
    env.clock.advance(1_000)
    mq = next(mq for mq in a.owned_queues() if mq.queue_id == 0)
    pq = a.rebalance.process_queue_table[mq]
    pq.last_pull_timestamp -= 200_000  # its loop looks lost
    a.rebalance.do_rebalance()
    assert pq.dropped and a.rebalance.process_queue_table[mq] is not pq, "dropped and recreated in the round"
    revoke = [r for r in env.rows("REVOKE", "10.0.0.1@1") if r["queue_id"] == 0][-1]
    assert '"pull_expired"' in revoke["detail"]
    assert env.rows("ASSIGN", "10.0.0.1@1")[-1]["queue_id"] == 0


@pytest.mark.req("REBAL-7", "CLIENT-7")
def test_a_pull_consumer_keeps_an_idle_queue(env: ClientEnv) -> None:
    changes: list[tuple[str, frozenset, frozenset]] = []
    consumer = env.pull_consumer(message_queue_listener=lambda t, a, d: changes.append((t, a, d)))
    consumer.register_topic("T")
    consumer.start()
    env.clock.advance(1_000)
    assert changes and {mq.queue_id for mq in changes[-1][2]} == {0, 1, 2, 3}
    mq = next(iter(consumer.rebalance.process_queue_table))
    pq = consumer.rebalance.process_queue_table[mq]
    pq.last_pull_timestamp -= 200_000
    consumer.rebalance.do_rebalance()
    assert not pq.dropped and consumer.rebalance.process_queue_table[mq] is pq


# -- computePullFromWhere ---------------------------------------------------------------------------
@dataclass
class FakeGateway:
    broker_name: str = "b"
    query: QueryOffsetResult | Exception = field(default_factory=lambda: QueryOffsetResult(ResponseCode.SUCCESS, 7))
    max: int | Exception = 100
    searched: list[int] = field(default_factory=list)

    def query_offset(self, group: str, topic: str, queue_id: int) -> QueryOffsetResult:
        if isinstance(self.query, Exception):
            raise self.query
        return self.query

    def max_offset(self, topic: str, queue_id: int) -> int:
        if isinstance(self.max, Exception):
            raise self.max
        return self.max

    def search_offset(self, topic: str, queue_id: int, timestamp_ms: int) -> int:
        self.searched.append(timestamp_ms)
        return 42

    def set_ids_changed_listener(self, listener) -> None:  # type: ignore[no-untyped-def]
        pass


class Owner:
    def __init__(self, gateway: FakeGateway, where: ConsumeFromWhere, timestamp: int | None = None) -> None:
        from reference.client.remote_offset_store import RemoteBrokerOffsetStore

        self.config = ConsumerConfig("G", consume_from_where=where, consume_timestamp_ms=timestamp)
        self.client_id = "c"
        self.gateway = gateway
        self.clock = SimClock()
        self.rec = NULL_TRACE.source("client:c")
        self.offset_store = RemoteBrokerOffsetStore(gateway, "G", "c", self.rec)  # type: ignore[arg-type]
        self.started_ms = 1_000_000

    def new_process_queue(self) -> ProcessQueue:
        return ProcessQueue(0, 120_000)

    def execute_pull_request_immediately(self, pull_request) -> None:  # type: ignore[no-untyped-def]
        pass


LAST, FIRST, TIMESTAMP = (ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                          ConsumeFromWhere.CONSUME_FROM_TIMESTAMP)
NOT_FOUND = QueryOffsetResult(ResponseCode.QUERY_NOT_FOUND)


@pytest.mark.req("CLIENT-10")
@pytest.mark.parametrize(
    "where, query, topic, expected",
    [
        (LAST, QueryOffsetResult(ResponseCode.SUCCESS, 7), "T", 7),
        (FIRST, QueryOffsetResult(ResponseCode.SUCCESS, 7), "T", 7),
        (TIMESTAMP, QueryOffsetResult(ResponseCode.SUCCESS, 7), "T", 7),
        (LAST, NOT_FOUND, "T", 100),
        (LAST, NOT_FOUND, "%RETRY%G", 0),
        (FIRST, NOT_FOUND, "T", 0),
        (TIMESTAMP, NOT_FOUND, "T", 42),
        (TIMESTAMP, NOT_FOUND, "%RETRY%G", 100),
        (LAST, GatewayError("TIMEOUT"), "T", -1),
        (FIRST, QueryOffsetResult(ResponseCode.SYSTEM_ERROR), "T", -1),
    ],
)
def test_compute_pull_from_where(where, query, topic, expected) -> None:  # type: ignore[no-untyped-def]
    gateway = FakeGateway(query=query)
    rebalance = RebalancePushImpl(Owner(gateway, where))  # type: ignore[arg-type]
    assert rebalance.compute_pull_from_where(MessageQueue(topic, "b", 0)) == expected


@pytest.mark.req("CLIENT-10")
def test_timestamp_defaults_to_half_an_hour_before_start_and_errors_skip_the_queue() -> None:
    gateway = FakeGateway(query=NOT_FOUND)
    owner = Owner(gateway, TIMESTAMP)
    RebalancePushImpl(owner).compute_pull_from_where(MessageQueue("T", "b", 0))  # type: ignore[arg-type]
    assert gateway.searched == [1_000_000 - 30 * 60 * 1_000]
    gateway.max = GatewayError("CONNECTION_REFUSED")
    assert RebalancePushImpl(Owner(gateway, LAST)).compute_pull_from_where(  # type: ignore[arg-type]
        MessageQueue("T", "b", 0)) == -1
    store = Owner(FakeGateway(query=GatewayError("TIMEOUT")), LAST).offset_store
    assert store.read_offset(MessageQueue("T", "b", 0), store_type()) == OFFSET_READ_ERROR
    store = Owner(FakeGateway(query=NOT_FOUND), LAST).offset_store
    assert store.read_offset(MessageQueue("T", "b", 0), store_type()) == OFFSET_NOT_FOUND
    assert RebalancePullImpl(owner).compute_pull_from_where(MessageQueue("T", "b", 0)) == 0  # type: ignore[arg-type]


@pytest.mark.req("CLIENT-5")
@pytest.mark.parametrize("where", [LAST, FIRST, TIMESTAMP])
def test_a_committed_offset_is_the_start_and_none_is_corrected_by_the_setting(where) -> None:  # type: ignore[no-untyped-def]
    """The seed's part of CLIENT-5: a committed offset is where the queue starts, whatever the setting; without one
    the setting corrects it to some offset >= 0 (which one is CLIENT-10's)."""
    committed = RebalancePushImpl(Owner(FakeGateway(query=QueryOffsetResult(ResponseCode.SUCCESS, 7)), where))  # type: ignore[arg-type]
    assert committed.compute_pull_from_where(MessageQueue("T", "b", 0)) == 7
    corrected = RebalancePushImpl(Owner(FakeGateway(query=NOT_FOUND), where))  # type: ignore[arg-type]
    assert corrected.compute_pull_from_where(MessageQueue("T", "b", 0)) >= 0


def store_type():  # type: ignore[no-untyped-def]
    from reference.client.offset_store import ReadOffsetType

    return ReadOffsetType.READ_FROM_STORE


@pytest.mark.req("CLIENT-5")
def test_a_queue_whose_start_cannot_be_read_waits_for_the_next_round(env: ClientEnv) -> None:
    a = env.consumer("10.0.0.1@1", start=False)
    calls = {"n": 0}
    original = a.gateway.query_offset

    def flaky(group, topic, queue_id):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if topic == "T" and queue_id == 1 and calls["n"] < 4:
            raise GatewayError("TIMEOUT")
        return original(group, topic, queue_id)

    a.gateway.query_offset = flaky
    a.start()
    env.clock.advance(0)
    assert owned(a) == {0, 2, 3}
    env.clock.advance(20_500)
    assert owned(a) == {0, 1, 2, 3}


def test_instance_runs_one_consumer_per_group(env: ClientEnv) -> None:
    instance: MQClientInstance = env.instance("10.0.0.5@5", ClientConfig(rebalance_interval_ms=1_000))
    from reference.client.push_consumer import DefaultMQPushConsumer

    first = DefaultMQPushConsumer(ConsumerConfig("G"), None, instance)  # type: ignore[arg-type]
    first.start()
    second = DefaultMQPushConsumer(ConsumerConfig("G"), None, instance)  # type: ignore[arg-type]
    from reference.rules.errors import InvalidRequest

    with pytest.raises(InvalidRequest):
        second.start()
