"""``AllocateMachineRoomNearby``: consume in your own machine room, and cover rooms nobody is in.

Queues and consumers are grouped by machine room through a :class:`MachineRoomResolver`. A consumer
first takes its share (by the inner strategy) of its own room's queues among its own room's
consumers; then, for every room that has queues but no consumer at all, its share of those queues
among the whole group, room by room in Java string order (seed 001 §3, "就近机房策略"). A room name
that resolves empty is an error, as in RocketMQ.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from reference.allocation.errors import INDEX_OUT_OF_BOUNDS, AllocationError
from reference.allocation.javalang import java_split
from reference.allocation.message_queue import MessageQueue
from reference.allocation.ordering import java_string_key
from reference.allocation.strategy import AllocateMessageQueueStrategy, CheckedStrategy

#: The separator :class:`DashPrefixResolver` splits names on.
DASH = "-"


class MachineRoomResolver(Protocol):
    """Where a broker (by its queue) and a consumer (by its client id) are deployed."""

    def broker_deploy_in(self, mq: MessageQueue) -> str | None: ...

    def consumer_deploy_in(self, client_id: str) -> str | None: ...


def _first_dash_part(name: str) -> str:
    parts = java_split(name, DASH)
    if not parts:  # Java: split("-") of "-" or "--" is an empty array, and [0] throws
        raise AllocationError("Index 0 out of bounds for length 0", INDEX_OUT_OF_BOUNDS)
    return parts[0]


class DashPrefixResolver:
    """The resolver of RocketMQ's own tests: the room is the text before the first ``-`` (the whole
    name if there is none), as in broker ``IDC1-broker-a`` and client ``IDC1-192.168.0.7@12345``."""

    def broker_deploy_in(self, mq: MessageQueue) -> str:
        return _first_dash_part(mq.broker_name)

    def consumer_deploy_in(self, client_id: str) -> str:
        return _first_dash_part(client_id)


class AllocateMachineRoomNearby(CheckedStrategy):
    #: The registry builds the strategy named by ``innerStrategy`` (default Averagely) and hands it over.
    WRAPS_INNER = True
    JAVA_NAME = "AllocateMachineRoomNearby"

    def __init__(self, inner: AllocateMessageQueueStrategy, resolver: MachineRoomResolver) -> None:
        self.inner = inner
        self.resolver = resolver

    @property
    def name(self) -> str:
        return f"MACHINE_ROOM_NEARBY-{self.inner.name}"

    @classmethod
    def from_params(
        cls, params: Mapping[str, Any], inner: AllocateMessageQueueStrategy
    ) -> AllocateMachineRoomNearby:
        """``{"innerStrategy": Java class name}`` (default Averagely); rooms by :class:`DashPrefixResolver`."""
        return cls(inner, DashPrefixResolver())

    def share(
        self, consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        queues_by_room: dict[str, list[MessageQueue]] = {}
        for mq in mq_all:
            room = self.resolver.broker_deploy_in(mq)
            if not room:  # StringUtils.isEmpty: null or ""
                raise AllocationError(f"Machine room is null for mq {mq.java_str()}")
            queues_by_room.setdefault(room, []).append(mq)
        consumers_by_room: dict[str, list[str]] = {}
        for cid in cid_all:
            room = self.resolver.consumer_deploy_in(cid)
            if not room:
                raise AllocationError(f"Machine room is null for consumer id {cid}")
            consumers_by_room.setdefault(room, []).append(cid)

        result: list[MessageQueue] = []
        my_room = self.resolver.consumer_deploy_in(current_cid) or ""  # a member: its room was checked above
        local_queues = queues_by_room.pop(my_room, None)
        if local_queues:
            result += self.inner.allocate(consumer_group, current_cid, local_queues, consumers_by_room[my_room]) or []
        for room in sorted(queues_by_room, key=java_string_key):  # TreeMap order
            if room not in consumers_by_room:
                result += self.inner.allocate(consumer_group, current_cid, queues_by_room[room], cid_all) or []
        return result
