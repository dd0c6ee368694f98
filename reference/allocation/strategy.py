"""The strategy interface and the argument check every RocketMQ strategy inherits."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from reference.allocation.errors import CID_ALL_EMPTY, CURRENT_CID_EMPTY, MQ_ALL_EMPTY, AllocationError
from reference.allocation.javalang import is_empty
from reference.allocation.message_queue import MessageQueue


@runtime_checkable
class AllocateMessageQueueStrategy(Protocol):
    """RocketMQ's ``AllocateMessageQueueStrategy``: the share of ``current_cid`` among ``cid_all``.

    ``mq_all`` and ``cid_all`` arrive sorted (see :mod:`reference.allocation`); the result is a new
    list the caller may keep. ``name`` is RocketMQ's ``getName()`` (``"AVG"``, …).
    """

    @property
    def name(self) -> str: ...

    def allocate(
        self,
        consumer_group: str,
        current_cid: str | None,
        mq_all: Sequence[MessageQueue] | None,
        cid_all: Sequence[str] | None,
    ) -> list[MessageQueue] | None: ...


def check_arguments(
    current_cid: str | None, mq_all: Sequence[MessageQueue] | None, cid_all: Sequence[str] | None
) -> bool:
    """``AbstractAllocateMessageQueueStrategy.check``: raise for an empty current id, queue list or
    consumer list (in that order); return False when ``current_cid`` is not a member of the group,
    in which case a strategy returns an empty share (RocketMQ logs it as a bug and carries on)."""
    if is_empty(current_cid):
        raise AllocationError(CURRENT_CID_EMPTY)
    if not mq_all:
        raise AllocationError(MQ_ALL_EMPTY)
    if not cid_all:
        raise AllocationError(CID_ALL_EMPTY)
    return current_cid in cid_all


class CheckedStrategy:
    """RocketMQ's ``AbstractAllocateMessageQueueStrategy``: ``allocate`` runs :func:`check_arguments`
    and asks :meth:`share` only for a member of a non-empty group, so each strategy states just its
    own rule."""

    def allocate(
        self,
        consumer_group: str,
        current_cid: str | None,
        mq_all: Sequence[MessageQueue] | None,
        cid_all: Sequence[str] | None,
    ) -> list[MessageQueue]:
        if not check_arguments(current_cid, mq_all, cid_all):
            return []
        assert current_cid is not None and mq_all is not None and cid_all is not None  # else it raised
        return self.share(consumer_group, current_cid, mq_all, cid_all)

    def share(
        self, consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        """The queues of ``current_cid``, a member of ``cid_all``; both lists are non-empty."""
        raise NotImplementedError
