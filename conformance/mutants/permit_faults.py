"""Seeded faults in seed 003's filter and dispatch limits (FLOW-12, FLOW-13, FLOW-14): each dispatcher here gets
one thing wrong."""

from __future__ import annotations

from collections.abc import Iterable

from reference.broker.permits.consumer import PermitConsumer
from reference.broker.permits.cursor import EntryRead
from reference.broker.permits.dispatcher import MultipleConsumersDispatcher, SingleActiveConsumerDispatcher


class SingleSendsEveryEntry(SingleActiveConsumerDispatcher):
    def admit(self, reads: Iterable[EntryRead]) -> list[EntryRead]:
        return list(reads)


class SharedSendsEveryEntry(MultipleConsumersDispatcher):
    def admit(self, reads: Iterable[EntryRead]) -> list[EntryRead]:
        return list(reads)


class SingleIgnoresRate(SingleActiveConsumerDispatcher):
    def rate_budget(self, budget: int) -> int:
        return budget


class SharedIgnoresRate(MultipleConsumersDispatcher):
    def rate_budget(self, budget: int) -> int:
        return budget


class ReleasedBelowTheLimit(MultipleConsumersDispatcher):
    """Unblocks a consumer as soon as it is below maxUnackedMessagesPerConsumer, not at half of it."""

    def _blocked(self, consumer: PermitConsumer) -> bool:
        limit = self.limits.max_unacked_per_consumer
        consumer.blocked = limit > 0 and len(consumer.pending) >= limit
        return consumer.blocked
