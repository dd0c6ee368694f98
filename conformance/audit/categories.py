"""Finding categories: Jepsen-style anomaly names, the requirement each one breaks, and whether it is a violation.

One table owns the mapping so that the derivations, summary.json, the HTML report, the synthetic
fault injector (``--inject KIND=COUNT`` uses these names) and the tests all agree.

Requirement IDs
---------------
Each category cites the spec statement (``conformance/spec/requirements.toml``) it checks, and its
level is read from the spec. Should a cited ID ever be missing from the spec (a spec edited on its
own), :func:`resolve` says so and the category's ``provisional_level`` stands in, so the summary and
the report flag it instead of inventing a level.

Categories that are not violations (``expired``, ``pending`` and the duplicates with a cause, which
at-least-once allows) are counted exactly and reported with witnesses, but never change the exit
code. A duplicate without a cause is a violation: ALO-3 allows duplicates only with one.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from conformance import spec


@dataclass(frozen=True)
class Category:
    name: str
    #: The derivation family (module) that finds it; the report groups by it.
    family: str
    #: The requirement a finding of this category cites (a finding may cite a more specific one of
    #: ``also``, e.g. offset correction cites the OFFSET-N of the table row it disagrees with).
    requirement: str
    violation: bool
    description: str
    #: Level to use while ``requirement`` is not in the spec yet.
    provisional_level: str = "MUST"
    also: tuple[str, ...] = ()


CATEGORIES: tuple[Category, ...] = (
    Category("bad-row", "validation", "TRACE-1", True,
             "a row that is not a JSON object, lacks a column its event requires, has a wrong type, an unknown "
             "column or an unknown event (excluded from the other derivations)"),
    Category("lost", "messages", "ALO-1", True,
             "an expected message (matching the subscription, at or above the start offset) never consumed OK "
             "by the group (broadcasting: by each client alive at the end), sent before the horizon minus the "
             "settle time", also=("ALO-2",)),
    Category("expired", "messages", "ALO-1", False,
             "an expected message never consumed OK and below a RETENTION min offset: retention removed it",
             also=("ALO-2",)),
    Category("pending", "messages", "ALO-1", False,
             "an expected message not consumed yet, sent within the settle time before the horizon",
             also=("ALO-2",)),
    Category("unsafe-commit", "commits", "CONSUME-2", True,
             "a COMMIT of offset o while an expected, unexpired message below o was neither consumed OK nor handed "
             "to the retry topic"),
    Category("pull-after-drop", "drops", "REBAL-4", True,
             "a PULL_REQ by a client for a queue after its REVOKE and before a new ASSIGN"),
    Category("commit-after-drop", "drops", "REBAL-5", True,
             "a COMMIT naming a client for a queue after its REVOKE and before a new ASSIGN"),
    Category("ownership-overlap", "ownership", "REBAL-2", True,
             "two clients of a pulling clustering group owning one queue at once for longer than the window"),
    Category("bad-offset-correction", "offsets", "OFFSET-6", True,
             "a PULL_RESP whose status or next_offset disagrees with the offset-correction table",
             also=("OFFSET-1", "OFFSET-2", "OFFSET-3", "OFFSET-4", "OFFSET-5", "OFFSET-7", "OFFSET-8")),
    Category("early-poll-return", "long_poll", "LPOLL-2", True,
             "a held pull answered empty before its suspend time while no matching message arrived"),
    Category("late-poll-return", "long_poll", "LPOLL-3", True,
             "a held pull answered empty after suspend + hold-check interval + tolerance"),
    Category("slow-wake", "long_poll", "LPOLL-4", True,
             "a held pull answered more than the wake bound after the matching message that woke it"),
    Category("early-redelivery", "pop", "PACK-1", True,
             "a message POPped again before the previous delivery's invisibility ended, that handle not acked"),
    Category("redelivered-after-ack", "pop", "PACK-3", True,
             "a message POPped again after the group acked it"),
    Category("never-revived", "pop", "REVIVE-2", True,
             "an unacked POP whose invisibility ended before the horizon minus settle, neither revived nor "
             "redelivered"),
    Category("permit-overrun", "permits", "FLOW-2", True,
             "dispatches to a consumer exceeding the permits it granted (one finding per episode)"),
    Category("permit-freeze", "permits", "FLOW-3", True,
             "permits and backlog both positive for longer than the freeze window with nothing dispatched"),
    Category("duplicate-rebalance", "duplicates", "ALO-3", False,
             "a message consumed OK again after a REVOKE of its queue, or by another client (the queue changed "
             "hands)"),
    Category("duplicate-crash", "duplicates", "ALO-3", False,
             "a message consumed OK again after the first consumer (or the broker) crashed"),
    Category("duplicate-retry", "duplicates", "ALO-3", False,
             "a message consumed OK again after a LATER or ERROR outcome (retry)"),
    Category("duplicate-pop-redelivery", "duplicates", "ALO-3", False,
             "a message consumed OK again after being POPped more than once"),
    Category("duplicate-unknown", "duplicates", "ALO-3", True,
             "a message consumed OK twice by the same consumer with no recorded cause (ALO-3 allows duplicates "
             "only with a cause)"),
)

BY_NAME: dict[str, Category] = {c.name: c for c in CATEGORIES}


@dataclass(frozen=True)
class ResolvedRequirement:
    id: str
    level: str
    #: False when the spec does not define the ID yet (its level is the category's provisional one).
    in_spec: bool
    sentence: str = ""


@cache
def _spec_requirements() -> dict[str, spec.Requirement]:
    return spec.requirements()


def resolve(requirement_id: str, category: Category | None = None) -> ResolvedRequirement:
    """The level of a requirement: from the spec when it defines the ID, else provisional."""
    req = _spec_requirements().get(requirement_id)
    if req is not None:
        return ResolvedRequirement(req.id, req.level, True, req.sentence)
    level = category.provisional_level if category is not None else "MUST"
    return ResolvedRequirement(requirement_id, level, False)


def provisional_ids() -> list[str]:
    """Requirement IDs cited by some category but not (yet) defined in the spec."""
    ids = {cid for c in CATEGORIES for cid in (c.requirement, *c.also)}
    return sorted(i for i in ids if i not in _spec_requirements())
