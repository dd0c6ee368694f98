"""Finding: one broken invariant of a simulated run, as every simulation and its checks report it.

One shape for every judge of :mod:`.judges` (the pull and rebalance checks, the POP audit, the permit
checks): the anomaly's name, the requirement it breaks, a sentence, and what it is about
(the rows that prove it, a queue, a message, a client), so that a property suite's failure note, the
timeline filter and a report read every simulation's findings alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Finding:
    kind: str
    requirement: str
    message: str
    witnesses: tuple[dict[str, Any], ...] = ()
    #: (topic, queue id) the finding is about, when it is about one (for timeline filtering).
    queue: tuple[str, int] | None = None
    msg_id: str | None = None
    client_id: str | None = None

    def __str__(self) -> str:
        about = f" {self.msg_id}" if self.msg_id else ""
        return f"[{self.requirement}] {self.kind}{about}: {self.message}"
