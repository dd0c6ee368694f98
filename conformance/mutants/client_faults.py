"""Seeded faults of the reference client: each class breaks exactly one rule of seeds 000/001.

Used through ``ClientComponents`` in :mod:`conformance.mutants` (``Mutant.client``); the property
suites (``properties/test_rebalance_drop.py``, ``properties/test_at_least_once.py``) and the
conformance suite (``conformance/suite/test_client_conformance.py``) must fail on each.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from reference.allocation.message_queue import MessageQueue
from reference.client.consume_service import ConsumeMessageConcurrentlyService, ConsumeRequest
from reference.client.process_queue import ProcessQueue
from reference.client.pull_request import PullRequest
from reference.client.push_consumer import DefaultMQPushConsumer
from reference.client.rebalance import RebalancePushImpl
from reference.store.message import StoredMessage


class PullsDroppedQueue(DefaultMQPushConsumer):
    """Forgets seed 001 §4's first check: a dropped queue's PullRequest is put back and pulled on."""

    def discards(self, pull_request: PullRequest) -> bool:
        return False


class CommitsDroppedResults(ConsumeMessageConcurrentlyService):
    """Processes a result even when the queue was dropped while the listener ran (seed 001 §5), and,
    "so that the next owner need not redo it", flushes that queue's new offset to the broker at once."""

    def result_discarded(self, request: ConsumeRequest) -> bool:
        return False

    def commit_consumed(self, request: ConsumeRequest, offset: int) -> None:
        if offset < 0:
            return
        store = self.consumer.offset_store
        store.update_offset(request.message_queue, offset, True)
        if request.process_queue.dropped:
            store.persist(request.message_queue)


class CommitsLargestConsumed(ProcessQueue):
    """removeMessage answers one past the largest offset consumed so far instead of the smallest offset
    still cached, so a commit can pass a message whose listener is still running."""

    def __init__(self, now_ms: int, pull_max_idle_time_ms: int) -> None:
        super().__init__(now_ms, pull_max_idle_time_ms)
        self.largest_consumed = -1

    def remove_message(self, msgs: Iterable[StoredMessage]) -> int:
        msgs = list(msgs)
        if not self.msg_tree_map:
            return -1
        for msg in msgs:
            if self.msg_tree_map.pop(msg.queue_offset, None) is not None:
                self.msg_count -= 1
                self.msg_size -= len(msg.body)
            self.largest_consumed = max(self.largest_consumed, msg.queue_offset)
        return self.largest_consumed + 1


class UnsortedConsumerIds(RebalancePushImpl):
    """Sorts the queues but allocates over the member list in the order the broker sent it (seed 001 §3
    requires both sorted), so members with different views take overlapping, incomplete shares."""

    def sort_view(self, mq_set: Iterable[MessageQueue], cid_all: Sequence[str]) -> tuple[list[MessageQueue], list[str]]:
        return sorted(mq_set), list(cid_all)
