"""The values that travel between the engine and a strategy under test."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reference.allocation import MessageQueue


@dataclass(frozen=True)
class Request:
    """One ``allocate`` call. ``params`` is canonical JSON text so requests are hashable."""

    consumer_group: str
    current_cid: str
    mq_all: tuple[MessageQueue, ...]
    cid_all: tuple[str, ...]
    params_json: str = "{}"

    def describe(self) -> str:
        """Short enough for a one-line error message."""
        return (
            f"currentCID={json.dumps(self.current_cid, ensure_ascii=False)}, "
            f"{_count(len(self.mq_all), 'queue')}, {_count(len(self.cid_all), 'consumer')}"
        )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


@dataclass(frozen=True)
class Outcome:
    """What one call gave back: queues (in the order returned), or the error text of a refusal.

    ``defect`` is set when the call broke the interface itself (returned something that is not a
    list of queues, or changed its arguments); validity reports it.
    """

    queues: tuple[MessageQueue, ...] = ()
    error: str | None = None
    defect: str | None = None

    @property
    def refused(self) -> bool:
        return self.error is not None

    def normalized(self) -> tuple[Any, ...]:
        """Order-free form for comparisons: the rebalance keeps a share as a set."""
        if self.error is not None:
            return ("error", self.error)
        return ("queues", tuple(sorted(self.queues, key=lambda mq: mq.sort_key)))


def canonical_params(params: Mapping[str, Any]) -> str:
    return json.dumps(dict(params), sort_keys=True, separators=(",", ":"))


@dataclass
class Observations:
    """Numbers a property measures on every example even when nothing is declared about them."""

    worst: int | None = None

    def record(self, value: int) -> None:
        self.worst = value if self.worst is None else max(self.worst, value)
