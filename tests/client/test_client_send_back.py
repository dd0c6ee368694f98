"""Send-back on the broker (CONSUME-10): retry delays, dead letters, copies that survive restarts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reference.broker.broker import Broker
from reference.broker.send_back import DELAY_LEVELS_MS
from reference.client.consume_service import trace_coordinates
from reference.rules.topics import (
    PROPERTY_ORIGIN_QUEUE_ID,
    PROPERTY_ORIGIN_QUEUE_OFFSET,
    PROPERTY_RETRY_TOPIC,
    SCHEDULE_TOPIC,
)
from reference.store.message import UNIQ_KEY, StoredMessage

from .conftest import ClientEnv


def stored(env: ClientEnv, topic: str, queue_id: int, offset: int) -> StoredMessage:
    result = env.broker.store.get_message("t", topic, queue_id, offset, 1, None)
    assert result.messages, f"nothing at {topic}/{queue_id}@{offset}: {result.status}"
    return result.messages[0]


def retry_max(env: ClientEnv) -> int:
    return env.broker.store.get_max_offset_in_queue("%RETRY%G", 0) if "%RETRY%G" in env.broker.store.topics() else 0


@pytest.mark.req("CONSUME-10.retry")
def test_delay_levels_are_upstreams_table() -> None:
    assert [d // 1000 for d in DELAY_LEVELS_MS] == [
        1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200,
    ]


@pytest.mark.req("CONSUME-10.retry")
def test_a_retry_copy_appears_after_level_3_plus_reconsume_times(env: ClientEnv) -> None:
    env.produce(1, queue=2)
    original = stored(env, "T", 2, 0)
    result = env.broker.send_back("G", original)
    assert (result.topic, result.dead_letter, result.delay_level, result.reconsume_times) == ("%RETRY%G", False, 3, 1)
    env.clock.advance(9_999)
    assert retry_max(env) == 0, "not before the 10 s of level 3"
    env.clock.advance(1)
    assert retry_max(env) == 1
    copy = stored(env, "%RETRY%G", 0, 0)
    assert copy.unique_id == original.unique_id == "m-0" and copy.reconsume_times == 1
    assert trace_coordinates(copy)[:3] == ("T", 2, 0) and copy.properties[PROPERTY_RETRY_TOPIC] == "T"
    assert copy.body == original.body
    second = env.broker.send_back("G", copy)
    assert second.delay_level == 4 and second.reconsume_times == 2
    env.clock.advance(DELAY_LEVELS_MS[3])
    again = stored(env, "%RETRY%G", 0, 1)
    assert trace_coordinates(again)[:3] == ("T", 2, 0), "the first origin is kept"
    assert again.properties[PROPERTY_ORIGIN_QUEUE_ID] == "2" and again.properties[PROPERTY_ORIGIN_QUEUE_OFFSET] == "0"
    assert again.properties[UNIQ_KEY] == "m-0"


@pytest.mark.req("CONSUME-10.dead-letter")
def test_dead_letter_after_max_reconsume_times_and_on_negative_level(env: ClientEnv) -> None:
    env.produce(2, queue=0)
    msg = stored(env, "T", 0, 0)
    tired = StoredMessage(*[getattr(msg, f) for f in msg.__slots__[:-3]], 16, msg.msg_id, msg.unique_id)
    result = env.broker.send_back("G", tired, max_reconsume_times=16)
    assert result.dead_letter and result.topic == "%DLQ%G"
    assert stored(env, "%DLQ%G", 0, 0).unique_id == "m-0"
    assert env.broker.send_back("G", stored(env, "T", 0, 1), delay_level=-1).dead_letter
    assert env.broker.send_back("G", stored(env, "T", 0, 1), delay_level=99).delay_level == 18, "clamped"


@pytest.mark.req("CONSUME-10.restart")
@pytest.mark.parametrize("crash", [False, True])
def test_waiting_copies_survive_a_broker_restart(env: ClientEnv, crash: bool) -> None:
    env.produce(3, queue=1)
    for offset in range(3):
        env.broker.send_back("G", stored(env, "T", 1, offset))
    env.clock.advance(5_000)
    data_dir = env.broker.data_dir
    if crash:
        env.broker.send_back_processor.schedule_service._running = False  # its timers die with it
        env.broker.hold_service.shutdown()
        env.broker.consumer_manager.shutdown()
    else:
        env.broker.shutdown()
    reopened = Broker(data_dir, env.clock, store_config=env.broker.store.config)
    reopened.start()
    try:
        env.clock.advance(5_000)
        assert reopened.store.get_max_offset_in_queue("%RETRY%G", 0) == 3
        env.clock.advance(60_000)
        assert reopened.store.get_max_offset_in_queue("%RETRY%G", 0) == 3, "each copy delivered once"
    finally:
        reopened.shutdown()


def test_schedule_topic_holds_the_waiting_copies(env: ClientEnv) -> None:
    env.produce(1, queue=0)
    result = env.broker.send_back("G", stored(env, "T", 0, 0), delay_level=1)
    assert result.queue_id == 0 and SCHEDULE_TOPIC in env.broker.store.topics()
    assert env.broker.store.get_max_offset_in_queue(SCHEDULE_TOPIC, 0) == 1


def test_bad_send_backs_are_refused(env: ClientEnv) -> None:
    from reference.rules.errors import InvalidRequest

    env.produce(1, queue=0)
    with pytest.raises(InvalidRequest):
        env.broker.send_back("", stored(env, "T", 0, 0))
    with pytest.raises(InvalidRequest):
        env.broker.send_back("G", stored(env, "T", 0, 0), max_reconsume_times=-1)


def test_schedule_progress_is_persisted(env: ClientEnv) -> None:
    env.produce(1, queue=0)
    env.broker.send_back("G", stored(env, "T", 0, 0), delay_level=1)
    env.clock.advance(1_000)
    path = Path(env.broker.data_dir) / "config" / "delayOffset.json"
    assert json.loads(path.read_text()) == {"offsetTable": {"1": 1}}
