"""What a strategy promises, which decides the properties that must hold for it.

Every strategy must be *valid* (its share is a list of queues from ``mq_all``, it accepts well-formed
input) and *deterministic*. The *model* says what the group's shares add up to:

* ``clustering`` (RocketMQ's CLUSTERING mode): every queue to exactly one consumer of the group;
* ``broadcasting``: every consumer gets every queue;
* ``pop-share``: the broker's POP allocation, where each queue has several owners on purpose
  (``params.popShareQueueNum`` and ``params.innerStrategy`` are sent with every request);
* ``configured``: each consumer gets the list configured for it (``params.messageQueueList``).

Balance and stickiness are measured for every strategy; they must hold only when a bound is
declared. A machine-room mode adds the room property and shapes the generated names.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

CLUSTERING = "clustering"
BROADCASTING = "broadcasting"
POP_SHARE = "pop-share"
CONFIGURED = "configured"

#: ``<room>@<broker>`` brokers and ``params.consumeridcs`` (AllocateMessageQueueByMachineRoom).
ROOM_BY_IDC = "by-idc"
#: ``<ROOM>-…`` brokers and client ids, nearby fallback (AllocateMachineRoomNearby).
ROOM_NEARBY = "nearby"
ROOM_MODES = (ROOM_BY_IDC, ROOM_NEARBY)

#: The POP inner strategy when none is declared: the broker's default, AVG.
DEFAULT_POP_INNER = "AllocateMessageQueueAveragely"


@dataclass(frozen=True)
class Declaration:
    model: str = CLUSTERING
    balance_bound: int | None = None
    stickiness_bound: int | None = None
    machine_room: str | None = None
    pop_inner: str = DEFAULT_POP_INNER
    params: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        parts = [self.model]
        if self.balance_bound is not None:
            parts.append(f"balance ≤ {self.balance_bound}")
        if self.stickiness_bound is not None:
            parts.append(f"stickiness ≤ {self.stickiness_bound}")
        if self.machine_room:
            parts.append(f"machine room {self.machine_room}")
        if self.model == POP_SHARE:
            parts.append(f"inner {self.pop_inner}")
        if self.params:
            parts.append(f"params {self.params}")
        return ", ".join(parts)

    def cli_flags(self) -> list[str]:
        """The ``mqtck strategy check`` flags that declare these promises for a strategy given by ``--exec``
        (model names are the flags' own: ``--configured``, ``--pop-share``, ``--broadcasting``)."""
        flags = [] if self.model == CLUSTERING else [f"--{self.model}"]
        if self.balance_bound is not None:
            flags += ["--balance-bound", str(self.balance_bound)]
        if self.stickiness_bound is not None:
            flags += ["--stickiness-bound", str(self.stickiness_bound)]
        if self.machine_room:
            flags += ["--machine-room", self.machine_room]
        return flags

    def with_overrides(self, **changes: Any) -> Declaration:
        """This declaration with every non-None change applied (how CLI flags refine a built-in's)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


#: What each built-in strategy promises (``mqtck strategy check NAME``).
BUILTIN_DECLARATIONS: dict[str, Declaration] = {
    "averagely": Declaration(balance_bound=1),
    "by_circle": Declaration(balance_bound=1),
    # Queues move only to a joining consumer or from a leaving one: no collateral moves at all.
    "consistent_hash": Declaration(stickiness_bound=0),
    "machine_room": Declaration(balance_bound=1, machine_room=ROOM_BY_IDC),
    "machine_room_nearby": Declaration(machine_room=ROOM_NEARBY),
    "by_config": Declaration(model=CONFIGURED),
    "pop_share": Declaration(model=POP_SHARE),
}
