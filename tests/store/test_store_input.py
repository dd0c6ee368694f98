"""Bad input: refused with InvalidRequest naming the field, and nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from reference.rules.errors import InvalidRequest, TopicNotFound
from reference.rules.filter import SubscriptionData
from reference.store.config import MessageStoreConfig
from reference.store.message import Message


def _snapshot(store, tmp_path: Path) -> tuple:
    files = sorted(
        (str(p.relative_to(tmp_path)), p.read_bytes()) for p in (tmp_path / "s").rglob("*") if p.is_file()
    )
    return (
        store.get_commit_log_max_offset(),
        {q: store.get_max_offset_in_queue("T", q) for q in range(2)},
        store.topics(),
        files,
    )


@pytest.mark.req("STORE-8")
@pytest.mark.parametrize(
    "topic, queue_nums, field",
    [
        ("", 4, "topic"),
        ("a/b", 4, "topic"),
        ("has space", 4, "topic"),
        ("t@g", 4, "topic"),
        ("x" * 128, 4, "topic"),
        ("ok", 0, "queue_nums"),
        ("ok", 1025, "queue_nums"),
        ("ok", "4", "queue_nums"),
    ],
)
def test_create_topic_validates(make_store, topic, queue_nums, field) -> None:
    store = make_store()
    with pytest.raises(InvalidRequest) as info:
        store.create_topic(topic, queue_nums)
    assert info.value.field == field
    assert store.topics() == {}


@pytest.mark.req("STORE-8")
def test_topic_names_rocketmq_accepts(make_store) -> None:
    store = make_store()
    for name in ("%RETRY%group_1", "a|b", "A-z_0", "x" * 127):
        store.create_topic(name, 1)
    store.create_topic("A-z_0", 8)  # an existing topic's queue count is updated
    assert store.queue_nums("A-z_0") == 8
    assert len(store.topics()) == 4
    with pytest.raises(TopicNotFound) as info:
        store.queue_nums("nope")
    assert info.value.field == "topic" and info.value.code == "TOPIC_NOT_EXIST"


@pytest.mark.req("STORE-8")
def test_topics_survive_restart(make_store) -> None:
    store = make_store()
    store.create_topic("T", 3)
    store.create_topic("U", 1)
    store.close()
    assert make_store().topics() == {"T": 3, "U": 1}


@pytest.mark.req("STORE-9")
@pytest.mark.parametrize(
    "message, field",
    [
        (Message("nope", b"x", 0), "topic"),
        (Message("T", b"x", 2), "queue_id"),
        (Message("T", b"x", -1), "queue_id"),
        (Message("T", b"x" * 1025, 0), "body"),
        (Message("T", "text", 0), "body"),  # type: ignore[arg-type]
        (Message("T", b"x", 0, tags="has space"), "tags"),
        (Message("T", b"x", 0, tags="a||b"), "tags"),
        (Message("T", b"x", 0, tags="t" * 256), "tags"),
        (Message("T", b"x", 0, properties={"a\x01": "b"}), "properties"),
        (Message("T", b"x", 0, properties={"": "b"}), "properties"),
        (Message("T", b"x", 0, born_timestamp=-5), "born_timestamp"),
        (Message("T", b"x", 0, born_timestamp=2**63), "born_timestamp"),
        (Message("T", b"x", 0, reconsume_times=2**31), "reconsume_times"),
        (Message("T", b"x", 0, reconsume_times=-1), "reconsume_times"),
    ],
)
def test_bad_put_names_the_field_and_writes_nothing(make_store, tmp_path: Path, message, field) -> None:
    store = make_store(max_message_size=1024)
    store.create_topic("T", 2)
    store.put_message(Message("T", b"first", 0))
    before = _snapshot(store, tmp_path)
    with pytest.raises(InvalidRequest) as info:
        store.put_message(message)
    assert info.value.field == field
    with pytest.raises(InvalidRequest):  # a batch with one bad message writes none of them
        store.put_messages([Message("T", b"good", 1), message])
    assert _snapshot(store, tmp_path) == before


@pytest.mark.req("STORE-9")
def test_record_larger_than_a_segment_is_refused(make_store) -> None:
    store = make_store(commit_log_segment_bytes=4096)
    store.create_topic("T", 1)
    with pytest.raises(InvalidRequest) as info:
        store.put_message(Message("T", b"x" * 4096, 0))
    assert info.value.field == "body"
    assert store.get_commit_log_max_offset() == 0


@pytest.mark.req("STORE-9")
@pytest.mark.parametrize("expression", ["||", " || ", "a b", "a||b c", "x" * 256])
def test_malformed_filter_is_refused(expression: str) -> None:
    with pytest.raises(InvalidRequest) as info:
        SubscriptionData.parse("T", expression)
    assert (info.value.field, info.value.code) == ("expression", "INVALID_FILTER")


@pytest.mark.req("STORE-9")
@pytest.mark.parametrize("expression", [None, "", "*", " * "])
def test_subscribe_all_forms(expression) -> None:
    sub = SubscriptionData.parse("T", expression, 7)
    assert sub.subscribes_all and sub.expression == "*" and sub.sub_version == 7
    assert sub.matches(12345) and sub.matches_tag(None)


@pytest.mark.req("STORE-9")
def test_get_message_on_an_unknown_queue(make_store) -> None:
    store = make_store()
    store.create_topic("T", 2)
    for topic, queue in (("nope", 0), ("T", 2)):
        result = store.get_message("g", topic, queue, 5, 32, None)
        assert result.status.name == "NO_MATCHED_LOGIC_QUEUE"
        assert (result.next_begin_offset, result.messages) == (0, [])


def test_config_refuses_nonsense() -> None:
    for bad in (
        dict(commit_log_segment_bytes=0), dict(delete_when="25"), dict(delete_when="4;x"),
        dict(disk_max_used_space_ratio=101), dict(flush_disk_type="LAZY"), dict(store_host=("host", 1)),
    ):
        with pytest.raises(ValueError):
            MessageStoreConfig(**bad)  # type: ignore[arg-type]
    assert MessageStoreConfig(delete_when="04;16").delete_when_hours() == {4, 16}
