"""Messages by key and by unique key: the reference's IndexService, small and rebuilt on demand.

RocketMQ's IndexService keeps hash-slot files of (key hash, commit-log offset, time) so ``QUERY_MESSAGE``
(``mqadmin queryMsgByKey``, ``queryMsgByUniqueKey``) finds a message without a scan. The reference keeps the
same two lookups in memory: :class:`MessageIndex` remembers, per queue, how far it has indexed, and before each
query reads only the units written since (every KEYS word and the UNIQ_KEY of each record), so the hot path of a
send pays nothing and a restart costs one pass over what is still stored at the first query. Records removed by
retention drop out of the answers because their commit-log offset no longer starts an intact record.
"""

from __future__ import annotations

from collections import defaultdict

from reference.store.message import StoredMessage
from reference.store.store import MessageStore

#: RocketMQ's MessageConst.KEY_SEPARATOR: KEYS holds several keys separated by a space.
KEY_SEPARATOR = " "


class MessageIndex:
    """(topic, key) and (topic, unique key) -> commit-log offsets, caught up lazily per topic."""

    def __init__(self, store: MessageStore) -> None:
        self._store = store
        self._by_key: dict[tuple[str, str], list[int]] = defaultdict(list)
        self._by_unique: dict[tuple[str, str], list[int]] = defaultdict(list)
        self._indexed: dict[tuple[str, int], int] = {}

    def _catch_up(self, topic: str) -> None:
        for queue_id in range(self._store.queue_nums(topic)):
            start = self._indexed.get((topic, queue_id), 0)
            end = self._store.get_max_offset_in_queue(topic, queue_id)
            for _offset, phy in self._store.commit_log_offsets(topic, queue_id, start, end):
                message = self._store.look_message_by_offset(phy)
                if message is None:
                    continue
                for key in (message.keys or "").split(KEY_SEPARATOR):
                    if key:
                        self._by_key[(topic, key)].append(phy)
                if message.unique_id:
                    self._by_unique[(topic, message.unique_id)].append(phy)
            self._indexed[(topic, queue_id)] = end

    def query(self, topic: str, key: str, max_num: int, begin_ms: int = 0, end_ms: int | None = None,
              unique: bool = False) -> list[StoredMessage]:
        """At most ``max_num`` messages of ``topic`` carrying ``key`` (or that unique key), stored in
        [begin_ms, end_ms], oldest first."""
        if topic not in self._store.topics():
            return []
        self._catch_up(topic)
        found = []
        for phy in (self._by_unique if unique else self._by_key).get((topic, key), []):
            message = self._store.look_message_by_offset(phy)
            if message is None or message.store_timestamp < begin_ms:
                continue
            if end_ms is not None and message.store_timestamp > end_ms:
                continue
            found.append(message)
            if len(found) >= max_num:
                break
        return found
