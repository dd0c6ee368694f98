"""Queue allocation strategies: which message queues of a topic each consumer of a group consumes.

Theory of operation. RocketMQ's rebalance runs inside every consumer: each one independently fetches
the topic's queues (``mq_all``) and the group's client ids (``cid_all``), sorts both, and asks its
strategy for *its own* share. No one coordinates, so the group is only correct if every member, given
the same sorted inputs, computes compatible shares: together they must cover every queue, and no
queue may be taken by two members. This package reimplements the strategies that ship with Apache
RocketMQ, behind one interface (:class:`AllocateMessageQueueStrategy`), so that their results match
RocketMQ's own classes exactly (``fixtures/allocation/golden``), and the broker-side POP variant
(:class:`PopShareAllocation`), which deliberately shares queues.

What a strategy may assume (the caller's half of the contract, see :mod:`.ordering`):

* ``mq_all`` is sorted in :class:`MessageQueue` order (topic, then broker name, both by Java's
  UTF-16 code-unit order, then numeric queue id) and holds no duplicates;
* ``cid_all`` is sorted in Java ``String`` order and holds no duplicates;
* nothing else: ``current_cid`` may be missing from ``cid_all``, and any input may be empty (RocketMQ
  rejects those with ``IllegalArgumentException``, reproduced here as :class:`AllocationError`).
"""

from reference.allocation.averagely import AllocateMessageQueueAveragely
from reference.allocation.by_circle import AllocateMessageQueueAveragelyByCircle
from reference.allocation.by_config import AllocateMessageQueueByConfig
from reference.allocation.consistent_hash import AllocateMessageQueueConsistentHash
from reference.allocation.errors import AllocationError
from reference.allocation.machine_room import AllocateMessageQueueByMachineRoom
from reference.allocation.message_queue import MessageQueue, sort_mq_all
from reference.allocation.nearby import AllocateMachineRoomNearby, DashPrefixResolver, MachineRoomResolver
from reference.allocation.ordering import java_string_key, sort_cid_all
from reference.allocation.pop import PopShareAllocation
from reference.allocation.registry import BUILTIN_NAMES, strategy_class, strategy_from_params
from reference.allocation.strategy import AllocateMessageQueueStrategy

__all__ = [
    "BUILTIN_NAMES",
    "AllocateMachineRoomNearby",
    "AllocateMessageQueueAveragely",
    "AllocateMessageQueueAveragelyByCircle",
    "AllocateMessageQueueByConfig",
    "AllocateMessageQueueByMachineRoom",
    "AllocateMessageQueueConsistentHash",
    "AllocateMessageQueueStrategy",
    "AllocationError",
    "DashPrefixResolver",
    "MachineRoomResolver",
    "MessageQueue",
    "PopShareAllocation",
    "java_string_key",
    "sort_cid_all",
    "sort_mq_all",
    "strategy_class",
    "strategy_from_params",
]
