"""Seeded faults: allocation strategies each wrong in one specific, realistic way.

The tests prove that ``mqtck strategy check`` catches every one with the default profile. Each is a
small variation of Averagely (or of a hash ring), so that only its one defect can make it fail.
"""

from __future__ import annotations

import hashlib
import random

from reference.allocation import MessageQueue
from reference.allocation.averagely import average_block

#: The consumer count above which ``SixteenSlots`` goes wrong.
SLOTS = 16


def _member_index(current_cid: str, cid_all: list[str]) -> int | None:
    return cid_all.index(current_cid) if current_cid in cid_all else None


class AssignsTwice:
    """Each block runs one queue too far, into the next consumer's block."""

    name = "ASSIGNS_TWICE"

    def allocate(self, consumer_group, current_cid, mq_all, cid_all):
        index = _member_index(current_cid, cid_all)
        if index is None or not mq_all:
            return []
        block = average_block(index, len(mq_all), len(cid_all))
        end = min(block.stop + 1, len(mq_all)) if len(block) else block.stop
        return list(mq_all[block.start : end])


class DropsRemainder:
    """Everyone gets ``q // n`` queues; the ``q % n`` left over belong to nobody."""

    name = "DROPS_REMAINDER"

    def allocate(self, consumer_group, current_cid, mq_all, cid_all):
        index = _member_index(current_cid, cid_all)
        if index is None:
            return []
        size = len(mq_all) // len(cid_all)
        return list(mq_all[index * size : (index + 1) * size])


class QueueIdsAreUnique:
    """Indexes queues by queue id, as if there were one broker: same ids on other brokers vanish."""

    name = "QUEUE_IDS_ARE_UNIQUE"

    def allocate(self, consumer_group, current_cid, mq_all, cid_all):
        index = _member_index(current_cid, cid_all)
        if index is None or not mq_all:
            return []
        by_id = {mq.queue_id: mq for mq in mq_all}
        queues = [by_id[qid] for qid in sorted(by_id)]
        return [queues[i] for i in average_block(index, len(queues), len(cid_all))]


class SixteenSlots:
    """A fixed table of 16 slots: consumer 17 lands in slot 0 again, on top of consumer 1."""

    name = "SIXTEEN_SLOTS"

    def allocate(self, consumer_group, current_cid, mq_all, cid_all):
        index = _member_index(current_cid, cid_all)
        if index is None or not mq_all:
            return []
        slots = min(len(cid_all), SLOTS)
        return [mq_all[i] for i in average_block(index % SLOTS, len(mq_all), slots)]


class Shuffles:
    """Shuffles the consumers before finding its own position: a different answer every call."""

    name = "SHUFFLES"

    def allocate(self, consumer_group, current_cid, mq_all, cid_all):
        if current_cid not in cid_all or not mq_all:
            return []
        order = list(cid_all)
        random.shuffle(order)
        return [mq_all[i] for i in average_block(order.index(current_cid), len(mq_all), len(order))]


class OrdersByHash:
    """Orders consumers by Python's ``hash()``: stable in one process, different in the next."""

    name = "ORDERS_BY_HASH"

    def allocate(self, consumer_group, current_cid, mq_all, cid_all):
        if current_cid not in cid_all or not mq_all:
            return []
        order = sorted(cid_all, key=hash)
        return [mq_all[i] for i in average_block(order.index(current_cid), len(mq_all), len(order))]


class OutsiderIsFirst:
    """A consumer missing from cidAll is treated as the first one, so two consumers share a block."""

    name = "OUTSIDER_IS_FIRST"

    def allocate(self, consumer_group, current_cid, mq_all, cid_all):
        if not mq_all or not cid_all:
            return []
        index = _member_index(current_cid, cid_all) or 0
        return [mq_all[i] for i in average_block(index, len(mq_all), len(cid_all))]


class RemainderToLast:
    """Covers every queue, but the whole remainder goes to the last consumer: unbalanced."""

    name = "REMAINDER_TO_LAST"

    def allocate(self, consumer_group, current_cid, mq_all, cid_all):
        index = _member_index(current_cid, cid_all)
        if index is None:
            return []
        size = len(mq_all) // len(cid_all)
        end = len(mq_all) if index == len(cid_all) - 1 else (index + 1) * size
        return list(mq_all[index * size : end])


class ModuloHash:
    """"Consistent" hashing by ``md5(queue) % n``: a partition, but a join reshuffles nearly all."""

    name = "MODULO_HASH"

    def allocate(self, consumer_group, current_cid, mq_all, cid_all):
        if current_cid not in cid_all:
            return []
        index = cid_all.index(current_cid)
        def slot(mq: MessageQueue) -> int:
            return int.from_bytes(hashlib.md5(mq.java_str().encode()).digest()[:4], "big") % len(cid_all)
        return [mq for mq in mq_all if slot(mq) == index]


class RemembersFirstAnswer:
    """Caches each consumer's first answer and never recomputes it when the queues change."""

    name = "REMEMBERS_FIRST_ANSWER"

    def __init__(self) -> None:
        self._answers: dict[str, list[MessageQueue]] = {}

    def allocate(self, consumer_group, current_cid, mq_all, cid_all):
        if current_cid not in self._answers:
            index = _member_index(current_cid, cid_all)
            blocks = [] if index is None or not mq_all else average_block(index, len(mq_all), len(cid_all))
            self._answers[current_cid] = [mq_all[i] for i in blocks]
        return list(self._answers[current_cid])


class FollowsTheClock:
    """Rotates the shares by the wall clock's second: stable for a moment, then different."""

    name = "FOLLOWS_THE_CLOCK"

    def allocate(self, consumer_group, current_cid, mq_all, cid_all):
        import time

        if current_cid not in cid_all or not mq_all:
            return []
        index = (cid_all.index(current_cid) + int(time.time())) % len(cid_all)
        return [mq_all[i] for i in average_block(index, len(mq_all), len(cid_all))]


class ReturnsOneQueue:
    """Returns the first queue itself instead of a list holding it (an interface defect, not a wrong share)."""

    name = "RETURNS_ONE_QUEUE"

    def allocate(self, consumer_group, current_cid, mq_all, cid_all):
        return mq_all[0] if mq_all else []
