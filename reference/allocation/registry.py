"""Built-in strategies by name: RocketMQ's Java class names (as in the golden vectors) and short names.

``strategy_from_params(name, params)`` builds a configured strategy from the ``params`` object of a
golden vector or an exec-protocol request, so both speak one configuration language.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from reference.allocation.averagely import AllocateMessageQueueAveragely
from reference.allocation.by_circle import AllocateMessageQueueAveragelyByCircle
from reference.allocation.by_config import AllocateMessageQueueByConfig
from reference.allocation.consistent_hash import AllocateMessageQueueConsistentHash
from reference.allocation.machine_room import AllocateMessageQueueByMachineRoom
from reference.allocation.nearby import AllocateMachineRoomNearby
from reference.allocation.pop import PopShareAllocation
from reference.allocation.strategy import AllocateMessageQueueStrategy


class StrategyClass(Protocol):
    """What the registry knows of a built-in strategy's class: its Java class name, and how it is built."""

    JAVA_NAME: str

    def __call__(self, *args: Any, **kwargs: Any) -> AllocateMessageQueueStrategy: ...
    def from_params(self, params: Mapping[str, Any], *args: Any, **kwargs: Any) -> AllocateMessageQueueStrategy: ...


#: Short name → class. The short names are what ``mqtck strategy check NAME`` accepts.
_BY_SHORT_NAME: dict[str, StrategyClass] = {
    "averagely": AllocateMessageQueueAveragely,
    "by_circle": AllocateMessageQueueAveragelyByCircle,
    "consistent_hash": AllocateMessageQueueConsistentHash,
    "machine_room": AllocateMessageQueueByMachineRoom,
    "machine_room_nearby": AllocateMachineRoomNearby,
    "by_config": AllocateMessageQueueByConfig,
    "pop_share": PopShareAllocation,
}
_BY_JAVA_NAME: dict[str, StrategyClass] = {cls.JAVA_NAME: cls for cls in _BY_SHORT_NAME.values()}
#: getName() → class: the name a RocketMQ 5 client sends in QUERY_ASSIGNMENT's strategyName ("AVG", ...).
_BY_WIRE_NAME: dict[str, StrategyClass] = {
    name: cls for cls in _BY_SHORT_NAME.values() if isinstance(name := getattr(cls, "name", None), str)
}

#: The short names, in documentation order.
BUILTIN_NAMES: tuple[str, ...] = tuple(_BY_SHORT_NAME)


def strategy_class(name: str) -> StrategyClass:
    """The class for a short name, a Java class name or its getName(); ``KeyError`` naming the choices otherwise."""
    cls = _BY_SHORT_NAME.get(name) or _BY_JAVA_NAME.get(name) or _BY_WIRE_NAME.get(name)
    if cls is None:
        raise KeyError(f"unknown strategy {name!r}; built-ins: {', '.join(BUILTIN_NAMES)}")
    return cls


#: The parameter naming a wrapping strategy's inner strategy (machine-room nearby, POP share), and its default.
INNER_STRATEGY_PARAM = "innerStrategy"
DEFAULT_INNER_STRATEGY = "AllocateMessageQueueAveragely"


def strategy_from_params(name: str, params: Mapping[str, Any]) -> AllocateMessageQueueStrategy:
    """A configured instance; may raise :class:`~reference.allocation.errors.AllocationError` as the
    Java constructor does (e.g. a negative ``virtualNodeCnt``). A strategy that wraps another
    (``WRAPS_INNER``) gets its inner strategy built here, so no strategy module needs the registry."""
    cls = strategy_class(name)
    if getattr(cls, "WRAPS_INNER", False):
        inner = strategy_from_params(str(params.get(INNER_STRATEGY_PARAM, DEFAULT_INNER_STRATEGY)), {})
        return cls.from_params(params, inner)
    return cls.from_params(params)


class BuiltinStrategy:
    """A built-in strategy by name, loaded as the strategy checker loads a plug-in: ``from_params(params)``
    builds a configured instance (a wrapping strategy with its inner one)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def from_params(self, params: Mapping[str, Any]) -> AllocateMessageQueueStrategy:
        return strategy_from_params(self.name, params)
