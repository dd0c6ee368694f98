"""ConsumeMessageConcurrentlyService (seed 001 §5): batches, threads, the dropped checks, failures."""

from __future__ import annotations

import json

import pytest

from reference.client.config import MessageModel
from reference.client.consume_service import ConsumeConcurrentlyStatus
from reference.client.gateway import GatewayError

from .conftest import ClientEnv, RecordingListener

LATER = ConsumeConcurrentlyStatus.RECONSUME_LATER
OK = ConsumeConcurrentlyStatus.CONSUME_SUCCESS


@pytest.mark.req("CONSUME-7")
def test_one_message_per_call_and_at_most_20_calls_at_once(env: ClientEnv) -> None:
    listener = RecordingListener()
    running: list[int] = []
    busy = {"now": 0, "max": 0}
    consumer = env.consumer(listener=listener, busy_ms=lambda msgs: 1_000)
    executor = consumer.consume_service.executor
    original = executor._finish

    def finish(task):  # type: ignore[no-untyped-def]
        busy["max"] = max(busy["max"], executor._busy)
        original(task)

    executor._finish = finish
    env.produce(60, queue=0)
    env.clock.advance(10_000)
    assert all(len(call) == 1 for call in listener.calls) and len(listener.calls) == 60
    assert busy["max"] == 20, "consumeThreadMin (20) calls at most run at once"
    assert not running


@pytest.mark.req("CONSUME-7")
def test_larger_batches_when_configured(env: ClientEnv) -> None:
    listener = RecordingListener()
    env.consumer(listener=listener, consume_message_batch_max_size=4)
    env.produce(10, queue=0)
    env.clock.advance(1_000)
    assert [len(c) for c in listener.calls] == [4, 4, 2]


@pytest.mark.req("CONSUME-1", "REBAL-5")
def test_dropped_before_the_call_is_skipped_and_during_it_discarded(env: ClientEnv) -> None:
    listener = RecordingListener()
    consumer = env.consumer(listener=listener, busy_ms=lambda msgs: 5_000, consume_thread_min=2)
    env.produce(6, queue=0)
    env.clock.advance(100)
    assert len(listener.calls) == 2, "two threads busy, four batches waiting"
    mq = next(mq for mq in consumer.owned_queues() if mq.queue_id == 0)
    pq = consumer.rebalance.process_queue_table[mq]
    pq.dropped = True
    before = dict(consumer.offset_store.offset_table)
    env.clock.advance(30_000)
    assert len(listener.calls) == 2, "queued batches of a dropped queue never reach the listener"
    consumes = [r for r in env.rows("CONSUME") if r["queue_id"] == 0]
    assert len(consumes) == 2 and all(json.loads(r["detail"]) == {"dropped": True} for r in consumes)
    assert consumer.offset_store.offset_table.get(mq) == before.get(mq), "their results are not committed"
    assert pq.msg_count == 6


@pytest.mark.req("CONSUME-2")
def test_the_commit_point_waits_for_a_slow_message(env: ClientEnv) -> None:
    slow = {"m-0"}
    consumer = env.consumer(busy_ms=lambda msgs: 9_000 if msgs[0].unique_id in slow else 10)
    env.produce(5, queue=0)
    env.clock.advance(2_000)
    mq = next(mq for mq in consumer.owned_queues() if mq.queue_id == 0)
    assert consumer.offset_store.offset_table.get(mq, 0) == 0, "m-0 is still in flight"
    env.clock.advance(8_000)
    assert consumer.offset_store.offset_table[mq] == 5


@pytest.mark.req("CONSUME-3.client")
def test_failures_are_sent_back_and_traced(env: ClientEnv) -> None:
    def decide(msgs, context):  # type: ignore[no-untyped-def]
        if msgs[0].unique_id == "m-1" and msgs[0].reconsume_times == 0:
            raise RuntimeError("boom")
        return LATER if msgs[0].unique_id == "m-2" and msgs[0].reconsume_times < 2 else OK

    listener = RecordingListener(decide=decide)
    consumer = env.consumer(listener=listener)
    env.produce(3, queue=0)
    env.clock.advance(200_000)
    consumes = [(r["msg_id"], r["status"], r.get("detail")) for r in env.rows("CONSUME")]
    assert ("m-1", "ERROR", '{"retry": "%RETRY%G"}') in consumes
    assert ("m-2", "LATER", '{"retry": "%RETRY%G"}') in consumes
    ok = [c for c in consumes if c[1] == "OK"]
    assert sorted(c[0] for c in ok) == ["m-0", "m-1", "m-2"]
    reconsumes = [(r["msg_id"], r["reconsume_times"]) for r in env.rows("DELIVER")]
    assert ("m-2", 2) in reconsumes and ("m-1", 1) in reconsumes
    retried = next(r for r in env.rows("DELIVER") if r["msg_id"] == "m-2" and r["reconsume_times"] == 2)
    assert retried["topic"] == "T" and retried["queue_id"] == 0 and retried["offset"] == 2
    assert json.loads(retried["detail"])["retry_topic"] == "%RETRY%G"
    mq = next(mq for mq in consumer.owned_queues() if mq.topic == "T" and mq.queue_id == 0)
    assert consumer.offset_store.offset_table[mq] == 3, "handed over: the original queue moves on"


@pytest.mark.req("CONSUME-4")
def test_a_failed_send_back_is_consumed_again_locally_after_5s(env: ClientEnv) -> None:
    listener = RecordingListener(decide=lambda msgs, ctx: LATER if msgs[0].reconsume_times == 0 else OK)
    consumer = env.consumer(listener=listener)

    def refuse(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise GatewayError("TIMEOUT")

    consumer.gateway.send_back = refuse
    env.produce(2, queue=0)
    env.clock.advance(100)
    mq = next(mq for mq in consumer.owned_queues() if mq.queue_id == 0)
    assert consumer.offset_store.offset_table.get(mq, 0) == 0, "the commit point stays below the failed message"
    local = [r for r in env.rows("CONSUME") if r.get("detail") == '{"retry": "local"}']
    assert len(local) == 2
    env.clock.advance(4_800)
    assert len(listener.calls) == 2
    env.clock.advance(300)
    assert len(listener.calls) == 4 and all(c[0].reconsume_times == 1 for c in listener.calls[2:])
    assert consumer.offset_store.offset_table[mq] == 2


@pytest.mark.req("CONSUME-6")
def test_broadcasting_failures_are_discarded_not_sent_back(env: ClientEnv) -> None:
    listener = RecordingListener(status=LATER)
    consumer = env.consumer(listener=listener, message_model=MessageModel.BROADCASTING)
    sent = []
    consumer.gateway.send_back = lambda *a: sent.append(a)  # type: ignore[assignment]
    env.clock.advance(10)  # started (from the last offset) before the messages arrive
    env.produce(3, queue=1)
    env.clock.advance(60_000)
    assert not sent and len(listener.calls) == 3
    assert all(json.loads(r["detail"]) == {"discarded": True} for r in env.rows("CONSUME"))


def test_ack_index_splits_a_batch(env: ClientEnv) -> None:
    def decide(msgs, context):  # type: ignore[no-untyped-def]
        if msgs[0].reconsume_times == 0:
            context.ack_index = 1
        return OK

    env.consumer(listener=RecordingListener(decide=decide), consume_message_batch_max_size=4)
    env.produce(4, queue=0)
    env.clock.advance(1_000)
    statuses = [(r["msg_id"], r["status"]) for r in env.rows("CONSUME") if r["topic"] == "T"][:4]
    assert statuses == [("m-0", "OK"), ("m-1", "OK"), ("m-2", "LATER"), ("m-3", "LATER")]
