"""Topic permissions as RocketMQ's TopicConfig.perm: what ``mqadmin updateTopicPerm`` and ``updateTopic -p`` change.

A topic's perm is PermName's bits: READ (4), WRITE (2), both (6, the default). A topic without WRITE refuses sends
with NO_PERMISSION (SendMessageProcessor: "the topic[...] sending message is forbidden") and its route shows the
perm, so a client stops choosing it. The table is a small JSON file beside the consumer offsets, so a permission
survives a restart as RocketMQ's topics.json keeps it. Only topics whose perm differs from the default are written.
"""

from __future__ import annotations

from pathlib import Path

from reference.rules.errors import require
from reference.store.jsonfile import read_json, write_json_atomic

PERM_WRITE = 2
PERM_READ = 4
PERM_READ_WRITE = PERM_READ | PERM_WRITE
#: The perms ``mqadmin updateTopicPerm`` accepts (UpdateTopicPermSubCommand: 2, 4 or 6).
VALID_PERMS = frozenset({PERM_WRITE, PERM_READ, PERM_READ_WRITE})


def check_perm(perm: int) -> None:
    """InvalidRequest naming ``perm`` unless it is 2, 4 or 6."""
    require(perm in VALID_PERMS, "perm", f"must be one of {sorted(VALID_PERMS)} (2 write, 4 read, 6 both), got {perm}")


class TopicPermTable:
    """Per-topic perm, persisted on every change."""

    def __init__(self, path: Path) -> None:
        self._path = path
        document = read_json(path)
        table = document.get("permTable", {}) if isinstance(document, dict) else {}
        self._perms: dict[str, int] = {str(topic): int(perm) for topic, perm in table.items()}

    def get(self, topic: str) -> int:
        return self._perms.get(topic, PERM_READ_WRITE)

    def set(self, topic: str, perm: int) -> None:
        """Set ``topic``'s perm; InvalidRequest names ``perm`` when it is not 2, 4 or 6."""
        check_perm(perm)
        if perm == PERM_READ_WRITE:
            self._perms.pop(topic, None)
        else:
            self._perms[topic] = perm
        write_json_atomic(self._path, {"permTable": dict(sorted(self._perms.items()))})

    def forget(self, topic: str) -> None:
        """A deleted topic loses its perm (a topic created again later starts read-write)."""
        if self._perms.pop(topic, None) is not None:
            write_json_atomic(self._path, {"permTable": dict(sorted(self._perms.items()))})

    def check_writable(self, topic: str) -> None:
        """NO_PERMISSION, with upstream's remark, for a send to a topic without WRITE."""
        require(bool(self.get(topic) & PERM_WRITE), "topic", f"the topic[{topic}] sending message is forbidden",
                "NO_PERMISSION")
