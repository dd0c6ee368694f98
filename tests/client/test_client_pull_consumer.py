"""DefaultMQPullConsumer (CLIENT-7): the application pulls at its own offsets."""

from __future__ import annotations

import pytest

from reference.allocation.message_queue import MessageQueue
from reference.client.gateway import GatewayError
from reference.client.pull_result import PullResult, PullStatus
from reference.rules.errors import InvalidRequest

from .conftest import ClientEnv


def collect(results: list) -> object:  # type: ignore[type-arg]
    return lambda result, error: results.append((result, error))


@pytest.mark.req("CLIENT-7")
def test_pull_at_chosen_offsets_with_client_side_tag_check(env: ClientEnv) -> None:
    consumer = env.pull_consumer()
    consumer.start()
    queues = consumer.fetch_subscribe_message_queues("T")
    assert [mq.queue_id for mq in queues] == [0, 1, 2, 3]
    env.produce(3, queue=0, tags="Aa")
    env.produce(2, queue=0, tags="BB")  # same hash code as "Aa": the broker cannot tell them apart
    results: list[tuple[PullResult | None, GatewayError | None]] = []
    consumer.pull(queues[0], "Aa", 1, 32, collect(results))
    env.clock.advance(0)
    result, error = results[0]
    assert error is None and result is not None and result.pull_status is PullStatus.FOUND
    assert [m.unique_id for m in result.msg_found_list] == ["m-1", "m-2"]
    assert result.next_begin_offset == 5
    pull = [r for r in env.rows("PULL_REQ", "10.0.0.9@9")][-1]
    assert pull["offset"] == 1 and pull["suspend_ms"] == 0


@pytest.mark.req("CLIENT-7")
def test_blocking_pull_is_held_until_a_message_arrives(env: ClientEnv) -> None:
    consumer = env.pull_consumer()
    consumer.start()
    mq = MessageQueue("T", "broker-a", 2)
    results: list = []
    consumer.pull(mq, "*", 0, 8, collect(results), block=True)
    env.clock.advance(3_000)
    assert results == []
    env.produce(1, queue=2)
    env.clock.advance(0)
    assert results[0][0].pull_status is PullStatus.FOUND
    consumer.pull(mq, "*", 1, 8, collect(results))
    env.clock.advance(0)
    assert results[1][0].pull_status is PullStatus.NO_NEW_MSG
    with pytest.raises(InvalidRequest):
        consumer.pull(mq, "*", -1, 8, collect(results))
    with pytest.raises(GatewayError):
        consumer.fetch_subscribe_message_queues("Nope")


@pytest.mark.req("CLIENT-7", "CONSUME-5")
def test_offsets_are_kept_and_persisted(env: ClientEnv) -> None:
    consumer = env.pull_consumer()
    consumer.start()
    mq = MessageQueue("T", "broker-a", 1)
    assert consumer.fetch_consume_offset(mq, from_store=True) == 0, "offset 0 is hot: the broker answers 0"
    consumer.update_consume_offset(mq, 3)
    assert consumer.fetch_consume_offset(mq, from_store=False) == 3
    env.clock.advance(10_000)
    assert env.broker.offsets.query_offset("PG", "T", 1) == 3, "persisted with the periodic persist"
    env.produce(4, queue=1)
    assert (consumer.min_offset(mq), consumer.max_offset(mq)) == (0, 4)
    assert consumer.search_offset(mq, 0) == 0
    consumer.shutdown()
    assert env.broker.consumer_ids("PG") == []


def test_errors_reach_the_callback(env: ClientEnv) -> None:
    consumer = env.pull_consumer()
    consumer.start()
    results: list = []
    env.host.broker = None
    consumer.pull(MessageQueue("T", "broker-a", 0), "*", 0, 8, collect(results))
    env.clock.advance(0)
    assert results[0][0] is None and results[0][1].code == "CONNECTION_REFUSED"
    env.host.broker = env.broker
    consumer.pull(MessageQueue("Nope", "broker-a", 0), "*", 0, 8, collect(results))
    env.clock.advance(0)
    assert results[1][1].code == "TOPIC_NOT_EXIST"
