"""LocalFileOffsetStore: a broadcasting consumer's own progress, in a local JSON file.

In broadcasting every consumer reads every queue, so its progress belongs to it alone and survives
its restarts through ``<dir>/<clientId>/<group>/offsets.json`` (RocketMQ keeps the same layout
under ``~/.rocketmq_offsets``). A persist merges the queues it writes into the file and replaces it
atomically; a crash loses what was consumed since the last one, which is consumed again. Each queue
written is traced as COMMIT.
"""

from __future__ import annotations

from collections.abc import Set
from pathlib import Path

from reference.allocation.message_queue import MessageQueue
from reference.client.offset_store import OFFSET_NOT_FOUND, OffsetTable, ReadOffsetType
from reference.store.jsonfile import read_json, write_json_atomic
from reference.trace import SourceRecorder

#: Separator of the file's queue keys: "topic@brokerName@queueId".
_KEY_SEPARATOR = "@"


def offsets_path(root: str | Path, client_id: str, group: str) -> Path:
    return Path(root) / client_id.replace("/", "_") / group / "offsets.json"


class LocalFileOffsetStore(OffsetTable):
    def __init__(self, path: Path, group: str, client_id: str, rec: SourceRecorder) -> None:
        super().__init__()
        self.path = path
        self.group = group
        self.client_id = client_id
        self.rec = rec

    def _read_file(self) -> dict[MessageQueue, int]:
        document = read_json(self.path)
        table: dict[MessageQueue, int] = {}
        if isinstance(document, dict):
            for key, offset in document.get("offsetTable", {}).items():
                topic, broker, queue_id = key.rsplit(_KEY_SEPARATOR, 2)
                table[MessageQueue(topic, broker, int(queue_id))] = int(offset)
        return table

    def load(self) -> None:
        self.offset_table.update(self._read_file())

    def read_offset(self, mq: MessageQueue, read_type: ReadOffsetType) -> int:
        memory = self.read_memory(mq, read_type)
        if memory is not None:
            return memory
        offset = self._read_file().get(mq)
        if offset is None:
            return OFFSET_NOT_FOUND
        self.update_offset(mq, offset, False)
        return offset

    def persist_all(self, mqs: Set[MessageQueue]) -> None:
        if mqs:
            self._write({mq: offset for mq, offset in self.offset_table.items() if mq in mqs})

    def persist(self, mq: MessageQueue) -> None:
        offset = self.offset_table.get(mq)
        if offset is not None:
            self._write({mq: offset})

    def _write(self, updates: dict[MessageQueue, int]) -> None:
        """Merge ``updates`` into the file (RocketMQ 5; 4.x rewrote it with the held queues only and
        persisted nothing for a single queue, so a broadcasting consumer whose offset was illegal read
        the stale offset back and looped)."""
        table = self._read_file()
        table.update(updates)
        document = {
            "offsetTable": {
                f"{mq.topic}{_KEY_SEPARATOR}{mq.broker_name}{_KEY_SEPARATOR}{mq.queue_id}": offset
                for mq, offset in sorted(table.items(), key=lambda item: item[0].sort_key)
            }
        }
        write_json_atomic(self.path, document)
        for mq, offset in updates.items():
            self.rec.record(
                "COMMIT", group=self.group, client_id=self.client_id, topic=mq.topic, broker=mq.broker_name,
                queue_id=mq.queue_id, offset=offset, detail={"store": "local"},
            )

    def remove_offset(self, mq: MessageQueue) -> None:
        """The file keeps the queue: a broadcasting consumer gets it back when it returns."""
