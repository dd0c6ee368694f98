"""ConsumerOffsetManager: the topic@group -> queueId -> offset table, its persistence and validation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reference.clock import SimClock
from reference.rules.errors import InvalidRequest
from reference.store.config import MessageStoreConfig
from reference.store.offsets import ConsumerOffsetManager


@pytest.mark.req("QOFF-1")
def test_table_is_keyed_topic_at_group_then_queue(tmp_path: Path) -> None:
    manager = ConsumerOffsetManager(tmp_path / "offsets.json", SimClock())
    assert manager.query_offset("g", "T", 0) == -1
    manager.commit_offset("g", "T", 0, 12)
    manager.commit_offset("g", "T", 3, 7)
    manager.commit_offset("h", "T", 0, 99)
    manager.commit_offset("g", "U", 0, 5)
    manager.commit_offset("g", "T", 0, 10)  # a later commit replaces the earlier, even if lower
    assert manager.query_offset("g", "T", 0) == 10
    assert manager.query_offset("g", "T", 1) == -1
    assert manager.offsets_of("g", "T") == {0: 10, 3: 7}
    assert manager.offsets_of("h", "T") == {0: 99}
    assert manager.offsets_of("nobody", "T") == {}
    manager.persist()
    table = json.loads((tmp_path / "offsets.json").read_text())["offsetTable"]
    assert table == {"T@g": {"0": 10, "3": 7}, "T@h": {"0": 99}, "U@g": {"0": 5}}


@pytest.mark.req("QOFF-2")
def test_offsets_survive_restart(tmp_path: Path) -> None:
    clock = SimClock()
    manager = ConsumerOffsetManager(tmp_path / "o.json", clock)
    manager.commit_offset("g", "T", 1, 42)
    manager.shutdown()
    again = ConsumerOffsetManager(tmp_path / "o.json", clock)
    assert again.query_offset("g", "T", 1) == 42
    assert again.offsets_of("g", "T") == {1: 42}


@pytest.mark.req("QOFF-2")
def test_offsets_are_persisted_every_interval(tmp_path: Path) -> None:
    clock = SimClock()
    path = tmp_path / "o.json"
    manager = ConsumerOffsetManager(path, clock, MessageStoreConfig(offset_persist_interval_ms=5000))
    manager.start_periodic()
    manager.commit_offset("g", "T", 0, 1)
    clock.advance(4999)
    assert not path.exists()
    clock.advance(1)
    assert ConsumerOffsetManager(path, clock).query_offset("g", "T", 0) == 1
    manager.commit_offset("g", "T", 0, 2)
    clock.advance(4999)
    # A crash now (no shutdown) loses only what was committed since the last write.
    assert ConsumerOffsetManager(path, clock).query_offset("g", "T", 0) == 1
    clock.advance(1)
    assert ConsumerOffsetManager(path, clock).query_offset("g", "T", 0) == 2
    manager.shutdown()
    assert clock.next_due_ms() is None  # the periodic task is gone


@pytest.mark.req("QOFF-3")
@pytest.mark.parametrize(
    "group, topic, queue_id, offset, field",
    [
        ("", "T", 0, 1, "group"),
        ("g@x", "T", 0, 1, "group"),
        ("g", "", 0, 1, "topic"),
        ("g", "T", -1, 1, "queue_id"),
        ("g", "T", 0, -1, "offset"),
        ("g", "T", 0, 1.5, "offset"),
    ],
)
def test_commit_validation(tmp_path: Path, group, topic, queue_id, offset, field) -> None:
    manager = ConsumerOffsetManager(tmp_path / "o.json", SimClock())
    manager.commit_offset("g", "T", 0, 5)
    with pytest.raises(InvalidRequest) as info:
        manager.commit_offset(group, topic, queue_id, offset)
    assert info.value.field == field
    assert manager.offsets_of("g", "T") == {0: 5}
