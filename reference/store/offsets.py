"""ConsumerOffsetManager: the broker's record of how far each clustering group has consumed.

The table is RocketMQ's two-level map (seed 000, ConsumerOffsetManager.offsetTable): the key
``"topic@group"``, then queue id -> the next offset the group will consume. A group that has no entry
gets -1 from :meth:`query_offset`; the broker then falls back to the queue's min offset or answers
QUERY_NOT_FOUND (seed 000, queryConsumerOffset), which is the broker's rule, not this table's.

The table is written to a JSON file (atomically) every ``offset_persist_interval_ms`` and on
shutdown, and read back on open, so committed progress survives a restart; commits made after the
last write are lost by a crash, which at-least-once delivery tolerates (those messages are
consumed again).
"""

from __future__ import annotations

import logging
from pathlib import Path

from reference.clock import Clock
from reference.periodic import PeriodicTask
from reference.rules.errors import require
from reference.store.config import MessageStoreConfig
from reference.store.disk import NO_SPACE_ERRNOS
from reference.store.jsonfile import read_json, write_json_atomic
from reference.store.names import check_name

log = logging.getLogger("mqtck.store")

#: Separator of the first-level key, as in RocketMQ ("topic@group").
TOPIC_GROUP_SEPARATOR = "@"


class ConsumerOffsetManager:
    def __init__(self, path: str | Path, clock: Clock, config: MessageStoreConfig | None = None) -> None:
        self._path = Path(path)
        interval = (config or MessageStoreConfig()).offset_persist_interval_ms
        self._task = PeriodicTask(clock, interval, interval, self.persist)
        self._table: dict[str, dict[int, int]] = {}
        document = read_json(self._path)
        if isinstance(document, dict):
            for key, queues in document.get("offsetTable", {}).items():
                self._table[key] = {int(q): int(o) for q, o in queues.items()}
        self._dirty = False

    def commit_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        """Record that ``group`` will next consume ``offset`` of (topic, queue_id)."""
        check_name(group, "group")
        check_name(topic, "topic")
        require(isinstance(queue_id, int) and queue_id >= 0, "queue_id", "must be an integer >= 0")
        require(isinstance(offset, int) and offset >= 0, "offset", "must be an integer >= 0")
        self._table.setdefault(_key(topic, group), {})[queue_id] = offset
        self._dirty = True

    def query_offset(self, group: str, topic: str, queue_id: int) -> int:
        """The committed offset, or -1 if the group never committed one for this queue."""
        return self._table.get(_key(topic, group), {}).get(queue_id, -1)

    def offsets_of(self, group: str, topic: str) -> dict[int, int]:
        """queue id -> committed offset for one group and topic (a copy)."""
        return dict(self._table.get(_key(topic, group), {}))

    def topic_groups(self) -> list[tuple[str, str]]:
        """Every (topic, group) with a committed offset: who consumes what, for the admin answers."""
        return [tuple(key.split(TOPIC_GROUP_SEPARATOR, 1)) for key in self._table]  # type: ignore[misc]

    def persist(self) -> None:
        """Write the table to disk if it changed since the last write."""
        if not self._dirty:
            return
        document = {
            "offsetTable": {
                key: {str(q): o for q, o in sorted(queues.items())} for key, queues in self._table.items()
            }
        }
        try:
            write_json_atomic(self._path, document)
        except OSError as exc:
            if exc.errno not in NO_SPACE_ERRNOS:
                raise
            # A full disk (STORE-22): commits go on in memory and the next persist tries again.
            log.warning("consumer offsets not persisted: %s", exc.strerror)
            return
        self._dirty = False

    def start_periodic(self) -> None:
        """Persist every ``offset_persist_interval_ms`` on the clock."""
        self._task.start()

    def shutdown(self) -> None:
        """Stop the periodic task and write what is left."""
        self._task.cancel()
        self.persist()


def _key(topic: str, group: str) -> str:
    return f"{topic}{TOPIC_GROUP_SEPARATOR}{group}"
