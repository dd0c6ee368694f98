"""The push consumer's pull loop (seed 000): batch and long-poll parameters, flow control, results."""

from __future__ import annotations

import pytest

from reference.broker.protocol import PullResponse, PullSysFlag
from reference.client.consume_service import ConsumeConcurrentlyStatus
from reference.client.gateway import GatewayError
from reference.client.pull_result import PullStatus, process_pull_result
from reference.rules.codes import ResponseCode
from reference.rules.filter import SubscriptionData, tags_hash_code
from reference.rules.status import GetMessageStatus
from reference.store.message import StoredMessage

from .conftest import ClientEnv, RecordingListener


def _spy_later(consumer) -> list[tuple[int, int]]:  # type: ignore[no-untyped-def]
    """Record (now, delay) of every PullRequest put back later."""
    calls: list[tuple[int, int]] = []
    original = consumer.execute_pull_request_later

    def later(pull_request, delay_ms):  # type: ignore[no-untyped-def]
        calls.append((consumer.clock.now_ms(), delay_ms))
        original(pull_request, delay_ms)

    consumer.execute_pull_request_later = later
    return calls


@pytest.mark.req("CLIENT-1")
def test_pulls_ask_32_with_a_15s_suspend_and_piggyback_the_offset(env: ClientEnv) -> None:
    listener = RecordingListener()
    env.consumer(listener=listener)
    env.produce(40, queue=0)
    env.clock.advance(1_000)
    pulls = [r for r in env.rows("PULL_REQ", "10.0.0.1@1") if r["queue_id"] == 0]
    assert pulls[0]["offset"] == 0 and pulls[1]["offset"] == 32 and pulls[2]["offset"] == 40
    assert all(r["max_nums"] == 32 and r["suspend_ms"] == 15_000 for r in pulls)
    assert len(listener.consumed) == 40
    # The next pull carries the in-memory offset as a piggybacked commit the broker accepts.
    env.clock.advance(20_000)
    broker_commits = [r for r in env.rows("COMMIT") if r["source"].startswith("broker") and r["queue_id"] == 0]
    assert broker_commits and broker_commits[-1]["offset"] == 40


@pytest.mark.req("CLIENT-1")
def test_a_held_pull_is_answered_by_an_arrival_and_only_one_is_in_flight(env: ClientEnv) -> None:
    env.consumer()
    env.clock.advance(1_000)
    before = len(env.rows("PULL_REQ", "10.0.0.1@1"))
    env.clock.advance(10_000)
    assert len(env.rows("PULL_REQ", "10.0.0.1@1")) == before, "held pulls: nothing new while waiting"
    env.produce(1, queue=2)
    env.clock.advance(10)
    assert len(env.rows("PULL_REQ", "10.0.0.1@1")) == before + 1, "the woken queue pulls again, only it"


@pytest.mark.req("CLIENT-8")
def test_pulls_set_suspend_and_piggyback_only_a_positive_offset(env: ClientEnv) -> None:
    """Split from CLIENT-1: the flags are upstream's (DefaultMQPushConsumerImpl.pullMessage), not seed 000's."""
    consumer = env.consumer(start=False)
    requests = []
    original = consumer.gateway.pull

    def spy(request, callback, timeout_ms):  # type: ignore[no-untyped-def]
        requests.append(request)
        return original(request, callback, timeout_ms)

    consumer.gateway.pull = spy  # type: ignore[method-assign]
    consumer.start()
    env.produce(40, queue=0)
    env.clock.advance(1_000)
    env.clock.advance(20_000)
    pulls = [r for r in requests if r.topic == "T" and r.queue_id == 0]
    assert len(pulls) >= 3 and all(r.sys_flag & PullSysFlag.SUSPEND for r in pulls)
    assert not pulls[0].sys_flag & PullSysFlag.COMMIT_OFFSET and pulls[0].commit_offset == 0, "offset 0: no commit"
    assert all(bool(r.sys_flag & PullSysFlag.COMMIT_OFFSET) == (r.commit_offset > 0) for r in pulls)
    assert any(r.commit_offset == 40 for r in pulls), "a positive in-memory offset is piggybacked"


@pytest.mark.req("CLIENT-3")
def test_each_pull_continues_from_the_answers_next_offset_and_a_failed_one_is_pulled_again(env: ClientEnv) -> None:
    """The seed's part of CLIENT-3: the next pull of a queue asks for the nextBeginOffset the answer returned; the
    found messages are consumed; a pull that failed is pulled again later."""
    consumer = env.consumer()
    env.produce(40, queue=0)
    env.clock.advance(1_000)
    rows = [r for r in env.sink.rows if r["source"] == "client:10.0.0.1@1" and r.get("queue_id") == 0
            and r["event"] in ("PULL_REQ", "PULL_RESP")]
    pairs = [(a, b) for a, b in zip(rows, rows[1:], strict=False)
             if a["event"] == "PULL_RESP" and b["event"] == "PULL_REQ"]
    assert len(pairs) >= 2 and all(b["offset"] == a["next_offset"] for a, b in pairs)
    assert len(consumer.listener.consumed) == 40
    env.host.broker = None
    env.clock.advance(26_000)
    env.host.broker = env.broker
    env.produce(4, queue=0)
    env.clock.advance(10_000)
    assert len(consumer.listener.consumed) == 44, "pulled again after the failures"


@pytest.mark.req("CLIENT-2")
def test_flow_control_by_count_pauses_pulls_and_retries_after_50ms(env: ClientEnv) -> None:
    consumer = env.consumer(busy_ms=lambda msgs: 600_000, consume_thread_min=1)
    later = _spy_later(consumer)
    env.produce(1_200, queue=1)
    env.clock.advance(2_000)
    pq = next(pq for mq, pq in consumer.rebalance.process_queue_table.items() if mq.queue_id == 1)
    assert 1_000 < pq.msg_count <= 1_000 + 32
    def pulls() -> int:
        return len([r for r in env.rows("PULL_REQ") if r["queue_id"] == 1 and r["source"].startswith("client")])

    before = pulls()
    env.clock.advance(10_000)
    assert pulls() == before, "no pull while more than 1 000 are cached"
    controlled = [(t, d) for t, d in later if d == 50]
    assert len(controlled) > 30, "the request is retried every 50 ms"
    assert all(b[0] - a[0] == 50 for a, b in zip(controlled, controlled[1:], strict=False))


@pytest.mark.req("CLIENT-2")
def test_flow_control_by_size(env: ClientEnv) -> None:
    consumer = env.consumer(busy_ms=lambda msgs: 600_000, consume_thread_min=1, pull_threshold_size_for_queue_mib=1)
    later = _spy_later(consumer)
    env.produce(40, queue=3, body=b"z" * 60_000)
    env.clock.advance(2_000)
    pq = next(pq for mq, pq in consumer.rebalance.process_queue_table.items() if mq.queue_id == 3)
    assert pq.msg_size // (1024 * 1024) > 1
    assert pq.msg_count < 40, "pulling stopped above 1 MiB"
    assert any(d == 50 for _t, d in later)


@pytest.mark.req("CLIENT-2")
def test_pulling_resumes_when_the_cache_drains(env: ClientEnv) -> None:
    consumer = env.consumer(busy_ms=lambda msgs: 1_000, consume_thread_min=20, pull_threshold_for_queue=40)
    env.produce(200, queue=0)
    env.clock.advance(60_000)
    assert len(consumer.listener.consumed) == 200


@pytest.mark.req("CLIENT-9")
def test_not_found_and_no_match_adopt_next_begin_and_commit_it(env: ClientEnv) -> None:
    consumer = env.consumer(expression="A", post_subscription_when_pull=True)
    env.produce(5, queue=0, tags="B")
    env.clock.advance(100)
    resp = [r for r in env.rows("PULL_RESP", "10.0.0.1@1") if r["queue_id"] == 0]
    assert resp[0]["status"] == "NO_MATCHED_MESSAGE" and resp[0]["next_offset"] == 5
    assert [r["offset"] for r in env.rows("PULL_REQ", "10.0.0.1@1") if r["queue_id"] == 0][-1] == 5
    mq = next(mq for mq in consumer.rebalance.process_queue_table if mq.queue_id == 0)
    assert consumer.offset_store.offset_table[mq] == 5, "nothing cached: nextBeginOffset is the commit point"


@pytest.mark.req("CLIENT-9")
def test_the_client_rechecks_tags_with_equal_hash_codes(env: ClientEnv) -> None:
    assert tags_hash_code("Aa") == tags_hash_code("BB")
    listener = RecordingListener()
    env.consumer(listener=listener, expression="Aa")
    env.produce(3, queue=0, tags="BB")
    env.produce(2, queue=0, tags="Aa")
    env.clock.advance(1_000)
    assert listener.consumed == ["m-3", "m-4"]


@pytest.mark.req("CLIENT-9")
def test_a_failed_pull_is_retried_after_3s(env: ClientEnv) -> None:
    consumer = env.consumer()
    env.clock.advance(100)
    env.host.broker = None
    later = _spy_later(consumer)
    env.clock.advance(16_000)  # held pulls answer at 15-20 s; their next pulls are refused
    env.clock.advance(10_000)
    refused = [(t, d) for t, d in later if d == 3_000]
    assert refused, "refused pulls are retried after 3 s"
    env.host.broker = env.broker
    env.produce(4)
    env.clock.advance(10_000)
    assert len(consumer.listener.consumed) == 4


@pytest.mark.req("CLIENT-9")
def test_pull_status_mapping() -> None:
    sub = SubscriptionData.parse("T", "*")
    cases = {
        ResponseCode.SUCCESS: PullStatus.FOUND,
        ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
        ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
        ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
    }
    for code, status in cases.items():
        response = PullResponse(code, GetMessageStatus.FOUND, 7, 0, 9)
        assert process_pull_result(response, sub).pull_status is status
    with pytest.raises(GatewayError) as err:
        process_pull_result(PullResponse(ResponseCode.SUBSCRIPTION_NOT_EXIST, None, 0, 0, 0), sub)
    assert err.value.code == "SUBSCRIPTION_NOT_EXIST"
    msg = StoredMessage("T", 0, 0, 0, 10, b"", "X", None, {}, 0, 0, 0, "a", "a")
    found = PullResponse(ResponseCode.SUCCESS, GetMessageStatus.FOUND, 1, 0, 1, (msg,))
    assert process_pull_result(found, SubscriptionData.parse("T", "Y")).msg_found_list == []
    assert process_pull_result(found, None).msg_found_list == [msg]


@pytest.mark.req("CLIENT-9")
def test_pull_interval_spaces_pulls(env: ClientEnv) -> None:
    consumer = env.consumer(pull_interval_ms=1_000)
    later = _spy_later(consumer)
    env.produce(64, queue=0)
    env.clock.advance(100)
    assert later and all(d == 1_000 for _t, d in later), "after FOUND the next pull waits pullInterval"


def test_listener_sees_retried_messages_under_their_original_topic(env: ClientEnv) -> None:
    seen: list[str] = []

    def decide(msgs, context):  # type: ignore[no-untyped-def]
        seen.extend(m.topic for m in msgs)
        first = msgs[0].reconsume_times == 0
        return ConsumeConcurrentlyStatus.RECONSUME_LATER if first else ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    env.consumer(listener=RecordingListener(decide=decide))
    env.produce(1, queue=0)
    env.clock.advance(60_000)
    assert seen == ["T", "T"]
