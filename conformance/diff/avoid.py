"""What ``mqtck diff``'s search steps around: behaviours of a reviewed deviation that changes a target's state, so
that every later step of the sequence would show it again and no ``[[diff]]`` rule could excuse it.

rocketmq-rust 1.0.0 drops a commit of an offset below the stored one (QOFF-1): after committing 7 then 3, every
later query of the queue answers 7 where the reference answers 3. A search that meets it stops there, and with
commits in a quarter of the steps it meets it within a few dozen sequences: nothing past QOFF-1 is ever compared.
An ``[[avoid]]`` entry of the implementation's expectations (:mod:`conformance.expectations`) names the behaviour
here and its ``[[expected]]`` entry; a step that would show it runs on neither target, is observed as
``{"avoided": ID}`` on both, and is counted, so that the run says what it did not compare.

The behaviour is judged on the program alone, the same way on both targets: what the sequence itself asked for
(its commits so far), never what a target answered, so that stepping around it cannot depend on a divergence.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from conformance import expectations
from conformance.diff.steps import CommitOffset, LongPoll, Side, Step
from conformance.expectations import Avoidance, ExpectationError

#: Each behaviour a search can step around, and what it is.
BEHAVIOURS = {
    "smaller-commit": "a commit of an offset below one the sequence already committed for the same group and queue "
                      "(a commit_offset step, or a long poll's commit or commit during its hold)",
}


def avoid_for(expect: str | None) -> tuple[Avoidance, ...]:
    """The ``[[avoid]]`` entries of an expectations name or file (none for None), each naming a behaviour of
    :data:`BEHAVIOURS` (ExpectationError naming the file and the entry otherwise)."""
    if expect is None:
        return ()
    entries = expectations.load(expect).avoid
    for n, entry in enumerate(entries, 1):
        if entry.behaviour not in BEHAVIOURS:
            raise ExpectationError(f"{expectations.resolve(expect)}: avoid entry {n}: behaviour {entry.behaviour!r} "
                                   f"is not one of {', '.join(sorted(BEHAVIOURS))}")
    return entries


def from_document(listed: Any) -> tuple[Avoidance, ...]:
    """The avoidances a replay file lists (``"avoid": [{"behaviour": ..., "id": ...}]``, what its search stepped
    around); ValueError naming the field when it is not that."""
    if listed is None:
        return ()
    if not isinstance(listed, list) or not all(
            isinstance(e, dict) and e.get("behaviour") in BEHAVIOURS and isinstance(e.get("id"), str) for e in listed):
        raise ValueError(f"avoid: expected a list of {{behaviour, id}} with behaviour one of "
                         f"{', '.join(sorted(BEHAVIOURS))}")
    return tuple(Avoidance(e["behaviour"], e["id"]) for e in listed)


def to_document(avoid: tuple[Avoidance, ...]) -> list[dict[str, str]]:
    return [{"behaviour": a.behaviour, "id": a.id} for a in avoid]


def _commits(step: Step) -> list[tuple[tuple[int, int, int], int]]:
    """The (group, topic, queue) program keys and offsets ``step`` commits, in the order it commits them."""
    if isinstance(step, CommitOffset):
        return [((step.group, step.topic, step.queue), step.offset)]
    if isinstance(step, LongPoll):
        key = (step.group, step.topic, step.queue)
        return [(key, offset) for offset in (step.commit, step.commit_during) if offset is not None]
    return []


@dataclass
class Avoider:
    """Per sequence: which steps show an avoided behaviour. Call :meth:`check` once per step, in order."""

    avoid: tuple[Avoidance, ...]
    #: The highest offset the sequence committed so far per (group, topic index, queue id).
    committed: dict[tuple[int, int, int], int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._smaller = next((a for a in self.avoid if a.behaviour == "smaller-commit"), None)

    def check(self, step: Step, side: Side) -> Avoidance | None:
        """The avoidance ``step`` falls under (it then runs on neither target), or None (its commits are noted)."""
        if self._smaller is None:
            return None  # nothing to step around: the commits need no ledger
        noted: dict[tuple[int, int, int], int] = {}
        for (g, t, q), offset in _commits(step):
            key = (g, side.topic_index(t), side.queue(t, q))
            if offset < noted.get(key, self.committed.get(key, offset)):
                return self._smaller
            noted[key] = offset
        self.committed.update(noted)
        return None
