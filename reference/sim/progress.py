"""ProgressTracker: watches the trace as it is written, to tell when a run has quiesced.

The simulator settles a run after its last step: it keeps virtual time going until every message
that can still be consumed has been consumed OK (or dead-lettered, or, broadcasting, discarded by a
failing listener) and every queue has exactly one owner (clustering) or every live consumer owns
every queue (broadcasting). This tracker keeps just enough state, updated row by row, to answer that
cheaply; the trace checks (:mod:`reference.sim.judges`) judge the run afterwards from the rows alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from reference.rules.topics import RETRY_GROUP_TOPIC_PREFIX, SCHEDULE_TOPIC
from reference.trace import TraceSink


class ProgressTracker:
    """A sink wrapper: every row goes to ``inner`` and updates the progress state."""

    enabled = True

    def __init__(
        self, inner: TraceSink, clustering: bool, queues: Iterable[tuple[str, int]], stable_ms: int = 0
    ) -> None:
        """``stable_ms``: ownership counts as settled only once no queue changed hands for this long
        (two rebalance rounds), so that allocations that flip-flop round after round are not mistaken
        for a settled state at the instant they happen to look right."""
        self.inner = inner
        self._inner_write = inner.write
        self.stable_us = stable_ms * 1000
        self.last_change_us = 0
        self.clustering = clustering
        self.events = 0
        self.sent: dict[str, tuple[str, int, int]] = {}
        #: Clustering: ids not yet consumed OK by the group. Broadcasting: per live client.
        self.pending: set[str] = set()
        self.pending_by_client: dict[str, set[str]] = {}
        #: Messages sent back to %RETRY% (-> when): still expected even when retention removes the
        #: original, unless retention ran on the schedule or retry queues after the hand-over.
        self.handed_over: dict[str, int] = {}
        self.copy_retention_us = -1
        self.live: set[str] = set()
        self.start: dict[tuple[str, str, int], int] = {}
        self.min_offset: dict[tuple[str, int], int] = {}
        self.owners: dict[tuple[str, int], set[str]] = {q: set() for q in queues}
        self._handlers = {
            "SEND": self._send, "CONSUME": self._consume, "ASSIGN": self._assign, "REVOKE": self._revoke,
            "SUBSCRIBE": self._subscribe, "UNSUBSCRIBE": self._gone, "CRASH": self._gone,
            "RETENTION": self._retention,
        }

    def write(self, row: dict[str, Any]) -> None:
        self._inner_write(row)
        self.events += 1
        event = row["event"]
        if event in self._handlers:
            self._handlers[event](row)

    def close(self) -> None:
        self.inner.close()

    # -- row handlers --------------------------------------------------------------------------
    def _send(self, row: dict[str, Any]) -> None:
        msg_id = row["msg_id"]
        self.sent[msg_id] = (row["topic"], row["queue_id"], row["offset"])
        if self.clustering:
            self.pending.add(msg_id)
        else:
            for pending in self.pending_by_client.values():  # a crashed consumer may come back for it
                pending.add(msg_id)

    def _consume(self, row: dict[str, Any]) -> None:
        detail = row.get("detail") or ""
        if f'"retry": "{RETRY_GROUP_TOPIC_PREFIX}' in detail:
            self.handed_over.setdefault(row["msg_id"], row["ts"])  # its copy is due later
        if row["status"] == "OK" or "dead_letter" in detail or "discarded" in detail:
            if self.clustering:
                self.pending.discard(row["msg_id"])
            else:
                pending = self.pending_by_client.get(row["client_id"])
                if pending is not None:
                    pending.discard(row["msg_id"])

    def _assign(self, row: dict[str, Any]) -> None:
        self.last_change_us = row["ts"]
        queue = (row["topic"], row["queue_id"])
        self.owners.setdefault(queue, set()).add(row["client_id"])
        scope = "" if self.clustering else row["client_id"]
        self.start.setdefault((scope, *queue), row["offset"])

    def _revoke(self, row: dict[str, Any]) -> None:
        self.last_change_us = row["ts"]
        self.owners.get((row["topic"], row["queue_id"]), set()).discard(row["client_id"])

    def _subscribe(self, row: dict[str, Any]) -> None:
        client = row["client_id"]
        if not row["source"].startswith("client:") or client in self.live:
            return
        self.live.add(client)
        if not self.clustering and client not in self.pending_by_client:
            self.pending_by_client[client] = set(self.sent)

    def _gone(self, row: dict[str, Any]) -> None:
        source = row["source"]
        if not source.startswith("client:"):
            return
        client = source[len("client:"):]
        self.last_change_us = row["ts"]
        self.live.discard(client)
        for owners in self.owners.values():
            owners.discard(client)

    def _retention(self, row: dict[str, Any]) -> None:
        topic = row["topic"]
        self.min_offset[(topic, row["queue_id"])] = row["min_offset"]
        if topic == SCHEDULE_TOPIC or topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            self.copy_retention_us = row["ts"]

    # -- the question --------------------------------------------------------------------------
    def _excused(self, msg_id: str, scope: str) -> bool:
        """Not expected (below the group's start, or expired); a queue never assigned is not excused,
        nor a message whose retry copy is on its way."""
        topic, queue_id, offset = self.sent[msg_id]
        handed = self.handed_over.get(msg_id)
        if handed is not None:
            return handed < self.copy_retention_us
        if offset < self.min_offset.get((topic, queue_id), 0):
            return True
        start = self.start.get((scope, topic, queue_id))
        return start is not None and offset < start

    def outstanding(self) -> int:
        """Messages still to be consumed by someone alive."""
        if self.clustering:
            return sum(1 for m in self.pending if not self._excused(m, ""))
        return sum(
            1 for client in self.live for m in self.pending_by_client.get(client, ()) if not self._excused(m, client)
        )

    def ownership_settled(self, now_ms: int) -> bool:
        if not self.live:
            return True
        if now_ms * 1000 - self.last_change_us < self.stable_us:
            return False
        if self.clustering:
            return all(len(owners) == 1 for owners in self.owners.values())
        return all(owners >= self.live for owners in self.owners.values())

    def quiet(self, now_ms: int) -> bool:
        return self.ownership_settled(now_ms) and self.outstanding() == 0
