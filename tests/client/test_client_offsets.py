"""Offset stores (CONSUME-9): remote for clustering, a local file for broadcasting; shutdown (CONSUME-5)."""

from __future__ import annotations

import json

import pytest

from reference.allocation.message_queue import MessageQueue
from reference.client.config import MessageModel
from reference.client.local_offset_store import LocalFileOffsetStore
from reference.client.offset_store import ReadOffsetType
from reference.trace import NULL_TRACE

from .conftest import ClientEnv

MQ = MessageQueue("T", "broker-a", 1)


@pytest.mark.req("CONSUME-9")
def test_remote_store_persists_every_5s_after_10s_and_forgets_queues_it_gave_away(env: ClientEnv) -> None:
    consumer = env.consumer("10.0.0.1@1")
    store = consumer.offset_store
    calls: list[int] = []
    original = store.persist_all
    store.persist_all = lambda mqs: (calls.append(env.clock.now_ms() - start_ms), original(mqs))  # type: ignore[method-assign]
    start_ms = env.clock.now_ms()
    env.produce(4)
    env.clock.advance(20_000)
    assert calls == [10_000, 15_000, 20_000]
    assert env.broker.offsets.query_offset("G", "T", 1) == 1
    store.update_offset(MQ, 0, increase_only=True)
    assert store.read_offset(MQ, ReadOffsetType.READ_FROM_MEMORY) == 1, "increase only"
    stray = MessageQueue("T", "broker-a", 99)
    store.update_offset(stray, 5, increase_only=False)
    store.persist_all(frozenset({MQ}))
    assert stray not in store.offset_table, "a queue not held any more is forgotten, not sent"


@pytest.mark.req("CONSUME-5")
def test_graceful_shutdown_persists_revokes_and_unregisters(env: ClientEnv) -> None:
    a = env.consumer("10.0.0.1@1")
    b = env.consumer("10.0.0.2@2")
    env.produce(8)
    env.clock.advance(2_000)
    assert env.broker.consumer_ids("G") == ["10.0.0.1@1", "10.0.0.2@2"]
    a.shutdown()
    shut_at = env.clock.now_ms() * 1000
    rows = [r for r in env.sink.rows if r["source"] == "client:10.0.0.1@1"]
    tail = [r["event"] for r in rows[-8:]]
    assert tail[-1] == "UNSUBSCRIBE" and tail.count("REVOKE") >= 2 and "COMMIT" in tail
    assert env.broker.consumer_ids("G") == ["10.0.0.2@2"]
    env.clock.advance(1)
    assert {mq.queue_id for mq in b.owned_queues() if mq.topic == "T"} == {0, 1, 2, 3}, "the rest rebalance at once"
    taken_over = [r for r in env.rows("ASSIGN", "10.0.0.2@2") if r["topic"] == "T" and r["ts"] >= shut_at]
    assert {r["queue_id"] for r in taken_over} == {0, 1} and {r["offset"] for r in taken_over} == {2}
    a.shutdown()  # idempotent


@pytest.mark.req("CONSUME-9")
def test_local_store_merges_and_survives_a_restart(env: ClientEnv) -> None:
    path = env.root / "local" / "offsets.json"
    store = LocalFileOffsetStore(path, "G", "c", NULL_TRACE.source("client:c"))
    other = MessageQueue("T", "broker-a", 2)
    store.update_offset(MQ, 7, False)
    store.update_offset(other, 3, False)
    store.persist_all(frozenset({MQ, other}))
    store.update_offset(MQ, 9, False)
    store.persist_all(frozenset({MQ}))
    document = json.loads(path.read_text())
    assert document == {"offsetTable": {"T@broker-a@1": 9, "T@broker-a@2": 3}}, "merged, not rewritten"
    store.update_offset(other, 4, False)
    store.persist(other)
    again = LocalFileOffsetStore(path, "G", "c", NULL_TRACE.source("client:c"))
    assert again.read_offset(MQ, ReadOffsetType.READ_FROM_MEMORY) == -1
    again.load()
    assert again.read_offset(MQ, ReadOffsetType.READ_FROM_MEMORY) == 9
    assert again.read_offset(other, ReadOffsetType.READ_FROM_STORE) == 4
    assert again.read_offset(MessageQueue("T", "broker-a", 3), ReadOffsetType.MEMORY_FIRST_THEN_STORE) == -1


@pytest.mark.req("CONSUME-9", "REBAL-8")
def test_a_broadcasting_consumer_resumes_from_its_file(env: ClientEnv) -> None:
    a = env.consumer("10.0.0.1@1", message_model=MessageModel.BROADCASTING)
    env.clock.advance(10)
    env.produce(8)
    env.clock.advance(11_000)
    a.instance.pull_message_service.shutdown()  # a crash: nothing after this moment
    a.instance.rebalance_service.shutdown()
    a.running = False
    env.produce(4)
    back = env.consumer("10.0.0.1@1", message_model=MessageModel.BROADCASTING)
    env.clock.advance(1_000)
    starts = {r["queue_id"]: r["offset"] for r in env.rows("ASSIGN", "10.0.0.1@1")[-4:]}
    assert starts == {0: 2, 1: 2, 2: 2, 3: 2}, "the offsets persisted at 10 s"
    assert sorted(back.listener.consumed) == ["m-10", "m-11", "m-8", "m-9"]
