"""``AllocateMessageQueueConsistentHash``: a hash ring of consumers, each queue to the next one clockwise.

Every consumer puts ``virtual_node_count`` virtual nodes on a ring of 2^32 points; virtual node r of
consumer c sits at ``hash(f"{c}-{r}")``. A queue goes to the owner of the first virtual node at or
after ``hash(queue.java_str())``, wrapping past the top. When a consumer joins or leaves, only the
queues whose nearest node belongs to it move (seed 001 §3, "一致性hash策略"), which is the point.

RocketMQ's default hash (``ConsistentHashRouter.MD5Hash``) is the first four bytes of the MD5 digest
of the key's UTF-8 bytes, read big-endian as an unsigned number. The ring is a ``TreeMap``: virtual
nodes are added consumer by consumer in ``cid_all`` order, and on a hash collision the later one
replaces the earlier. Reproducing all of that is what makes the results equal RocketMQ's.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from reference.allocation.errors import AllocationError
from reference.allocation.message_queue import MessageQueue
from reference.allocation.strategy import CheckedStrategy

#: Virtual nodes per consumer when none is configured (the no-argument Java constructor).
DEFAULT_VIRTUAL_NODE_COUNT = 10
#: Bytes of the MD5 digest that make up a ring position.
_HASH_BYTES = 4
#: Rings cached by (consumer ids, virtual node count, hash): a group asks once per member.
_RING_CACHE_SIZE = 64


def md5_hash(key: str) -> int:
    """``ConsistentHashRouter.MD5Hash.hash``. Java's ``getBytes(UTF_8)`` turns a lone surrogate into
    ``?``, and so does Python's ``errors="replace"``."""
    digest = hashlib.md5(key.encode("utf-8", "replace")).digest()
    return int.from_bytes(digest[:_HASH_BYTES], "big")


@functools.lru_cache(maxsize=_RING_CACHE_SIZE)
def _ring(cid_all: tuple[str, ...], virtual_nodes: int, hash_function: Callable[[str], int]):
    """Sorted ring positions and, position by position, the consumer owning that virtual node."""
    owner_at: dict[int, str] = {}
    for cid in cid_all:
        for replica in range(virtual_nodes):
            owner_at[hash_function(f"{cid}-{replica}")] = cid  # later wins, as TreeMap.put
    positions = sorted(owner_at)
    return positions, [owner_at[p] for p in positions]


class AllocateMessageQueueConsistentHash(CheckedStrategy):
    JAVA_NAME = "AllocateMessageQueueConsistentHash"
    name = "CONSISTENT_HASH"

    def __init__(
        self,
        virtual_node_count: int = DEFAULT_VIRTUAL_NODE_COUNT,
        hash_function: Callable[[str], int] = md5_hash,
    ) -> None:
        if virtual_node_count < 0:
            raise AllocationError(f"illegal virtualNodeCnt :{virtual_node_count}")
        self.virtual_node_count = virtual_node_count
        self.hash_function = hash_function

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> AllocateMessageQueueConsistentHash:
        """``{"virtualNodeCnt": n}``, default :data:`DEFAULT_VIRTUAL_NODE_COUNT`."""
        return cls(int(params.get("virtualNodeCnt", DEFAULT_VIRTUAL_NODE_COUNT)))

    def route(self, mq: MessageQueue, cid_all: Sequence[str]) -> str | None:
        """The consumer that owns ``mq``; ``None`` on an empty ring (zero virtual nodes)."""
        positions, owners = _ring(tuple(cid_all), self.virtual_node_count, self.hash_function)
        if not positions:
            return None
        at = bisect.bisect_left(positions, self.hash_function(mq.java_str()))
        return owners[at if at < len(positions) else 0]

    def share(
        self, consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        return [mq for mq in mq_all if self.route(mq, cid_all) == current_cid]
