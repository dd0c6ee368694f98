"""The topic table: which topics this broker stores and how many queues each has.

Persisted as ``config/topics.json`` (``{"topics": {name: queue_nums}}``) so that a restarted broker
accepts the same messages as before. Creating an existing topic updates its queue count, as
RocketMQ's UPDATE_AND_CREATE_TOPIC does; queues beyond a lowered count keep their data but take no
new messages.
"""

from __future__ import annotations

from pathlib import Path

from reference.rules.errors import require
from reference.store.jsonfile import read_json, write_json_atomic
from reference.store.names import check_name

#: Bounds on a topic's queue count (RocketMQ's default topic has 4 or 8; 1024 is our ceiling).
MIN_QUEUE_NUMS = 1
MAX_QUEUE_NUMS = 1024


class TopicTable:
    def __init__(self, path: Path) -> None:
        self._path = path
        document = read_json(path)
        topics = document.get("topics", {}) if isinstance(document, dict) else {}
        self._queue_nums: dict[str, int] = {str(k): int(v) for k, v in topics.items()}

    def create(self, topic: str, queue_nums: int) -> None:
        """Create or update ``topic`` with ``queue_nums`` queues; validates both first."""
        check_name(topic, "topic")
        require(
            isinstance(queue_nums, int) and MIN_QUEUE_NUMS <= queue_nums <= MAX_QUEUE_NUMS,
            "queue_nums",
            f"must be an integer in [{MIN_QUEUE_NUMS}, {MAX_QUEUE_NUMS}]",
        )
        if self._queue_nums.get(topic) != queue_nums:
            self._queue_nums[topic] = queue_nums
            write_json_atomic(self._path, {"topics": self._queue_nums})

    def delete(self, topic: str) -> bool:
        """Forget ``topic`` (RocketMQ's deleteTopicConfig); whether it existed. Its stored messages stay
        until retention removes them, but no send or pop reaches them, and a checkpoint of it is no
        longer revived (seed 004 lines 1103-1110)."""
        check_name(topic, "topic")
        if topic not in self._queue_nums:
            return False
        del self._queue_nums[topic]
        write_json_atomic(self._path, {"topics": self._queue_nums})
        return True

    def get(self, topic: str) -> int | None:
        return self._queue_nums.get(topic)

    def as_dict(self) -> dict[str, int]:
        return dict(self._queue_nums)
