"""Finding categories: Jepsen-style anomaly names, the requirement each one breaks, and whether it is a violation.

One table owns the mapping so that the derivations, summary.json, the HTML report, the synthetic
fault injector (``--inject KIND=COUNT`` uses these names) and the tests all agree.

Requirement IDs
---------------
Each category cites the spec statement (``conformance/spec/requirements.toml``) it checks, and its
level is read from the spec. Should a cited ID ever be missing from the spec (a spec edited on its
own), :func:`resolve` says so and the category's ``provisional_level`` stands in, so the summary and
the report flag it instead of inventing a level.

What a trace lets the audit judge
---------------------------------
A category is judged in a run only when the run has the events its derivation reads (``needs``): a trace
recorded off the wire has sends, pulls and commits but no CONSUME (the listener's outcome never crosses
the wire), and judging loss from it would call every message lost. Such a category is *not judged* in
that run, with the missing events named, and its findings there are withheld: a verdict the events
cannot support is never given.

Categories that are not violations (``expired``, ``pending`` and the duplicates with a cause, which
at-least-once allows; ``slow-wake``, which timing alone cannot prove) are counted exactly and reported with
witnesses, but never change the exit code. A duplicate without a cause is a violation: ALO-3 allows
duplicates only with one.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
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
    #: The events a run must have for this category to be judged there; "A|B" is satisfied by either, and
    #: CLIENT_RECORDED by any row a client recorded.
    needs: tuple[str, ...] = ()

    def unjudged_because(self, events: Collection[str]) -> str | None:
        """Why a run with ``events`` cannot be judged for this category ("no CONSUME rows, ACK rows or rows
        recorded by a client"), or None."""
        for need in self.needs:
            options = need.split("|")
            if not any(option in events for option in options):
                labels = [_LABELS.get(option, f"{option} rows") for option in options]
                listed = labels[0] if len(labels) == 1 else f"{', '.join(labels[:-1])} or {labels[-1]}"
                return f"no {listed}"
        return None


#: The need of a check on what only clients record (the listener's outcome, CONSUME; a dropped queue, REVOKE):
#: a run a client recorded lets it judge their absence (nothing consumed, nothing dropped); a run recorded
#: elsewhere (a broker, a recorder on the wire) does not, whatever it holds.
CLIENT_RECORDED = "client-recorded"
_LABELS = {CLIENT_RECORDED: "rows recorded by a client"}


CATEGORIES: tuple[Category, ...] = (
    Category("bad-row", "validation", "TRACE-1", True,
             "a row that is not a JSON object, lacks a column its event requires, has a wrong type, an unknown "
             "column or an unknown event (excluded from the other derivations)"),
    Category("lost", "messages", "ALO-1", True,
             "an expected message (matching the subscription, at or above the start offset) never consumed OK "
             "by the group (broadcasting: by each client alive at the end), sent before the horizon minus the "
             "settle time", also=("ALO-2",),
             needs=("SEND", "SUBSCRIBE", "CONSUME|ACK|" + CLIENT_RECORDED)),
    Category("expired", "messages", "ALO-1", False,
             "an expected message never consumed OK and below a RETENTION min offset: retention removed it",
             also=("ALO-2",),
             needs=("SEND", "SUBSCRIBE", "CONSUME|ACK|" + CLIENT_RECORDED)),
    Category("pending", "messages", "ALO-1", False,
             "an expected message not consumed yet, sent within the settle time before the horizon",
             also=("ALO-2",),
             needs=("SEND", "SUBSCRIBE", "CONSUME|ACK|" + CLIENT_RECORDED)),
    Category("unsafe-commit", "commits", "CONSUME-2", True,
             "a COMMIT of offset o while an expected, unexpired message below o was neither consumed OK nor handed "
             "to the retry topic",
             needs=("SEND", "COMMIT", "CONSUME|ACK|" + CLIENT_RECORDED)),
    Category("pull-after-drop", "drops", "REBAL-4", True,
             "a PULL_REQ by a client for a queue after its REVOKE and before a new ASSIGN",
             needs=("PULL_REQ", "REVOKE|" + CLIENT_RECORDED)),
    Category("commit-after-drop", "drops", "REBAL-5", True,
             "a COMMIT naming a client for a queue after its REVOKE and before a new ASSIGN",
             needs=("COMMIT", "REVOKE|" + CLIENT_RECORDED)),
    Category("ownership-overlap", "ownership", "REBAL-2", True,
             "two clients of a pulling clustering group owning one queue at once for longer than the window",
             needs=("ASSIGN",)),
    Category("bad-offset-correction", "offsets", "OFFSET-6", True,
             "a PULL_RESP whose status or next_offset disagrees with the offset-correction table",
             also=("OFFSET-1", "OFFSET-2", "OFFSET-3", "OFFSET-4", "OFFSET-5", "OFFSET-7", "OFFSET-8"),
             needs=("PULL_RESP",)),
    Category("early-poll-return", "long_poll", "LPOLL-2", True,
             "a held pull answered empty before its suspend time while no matching message arrived",
             needs=("PULL_REQ", "PULL_RESP")),
    Category("late-poll-return", "long_poll", "LPOLL-3", True,
             "a held pull answered empty after suspend + hold-check interval + tolerance",
             needs=("PULL_REQ", "PULL_RESP")),
    # Not a violation: a trace's clocks cannot tell a missing wake-up (LPOLL-4) from the #7358 race (LPOLL-9, a
    # SHOULD Apache RocketMQ deviates from: a message stored between the broker's read and its hold waits for the
    # next arrival or check) or from a stall of the machine, the broker or the recorder. A CI run recorded on a
    # loaded machine found four such waits past 1 s against Apache RocketMQ, which the gate judges LPOLL-4-clean.
    # The gate judges LPOLL-4 where it controls the timing (test_long_poll_realtime_conformance).
    Category("slow-wake", "long_poll", "LPOLL-4", False,
             "a held pull answered more than the wake bound after the matching message that woke it (reported, "
             "not a violation: the #7358 race, LPOLL-9, or a stall explains it as well as a missing wake-up)",
             needs=("SEND", "PULL_REQ", "PULL_RESP")),
    Category("early-redelivery", "pop", "PACK-1", True,
             "a message POPped again before the previous delivery's invisibility ended, that handle not acked",
             needs=("POP",)),
    Category("redelivered-after-ack", "pop", "PACK-3", True,
             "a message POPped again after the group acked it",
             needs=("POP", "ACK")),
    Category("never-revived", "pop", "REVIVE-2", True,
             "an unacked POP whose invisibility ended before the horizon minus settle, neither revived nor "
             "redelivered",
             needs=("POP", "ACK")),
    Category("permit-overrun", "permits", "FLOW-2", True,
             "an entry sent to a consumer that no read could carry: more entries since the consumer last held "
             "permits than those permits allow (one finding per entry)",
             needs=("FLOW", "DISPATCH")),
    Category("permit-entry-overrun", "permits", "FLOW-11", True,
             "an entry started for a consumer at 0 permits or below (the strict profile's SHOULD; Pulsar's "
             "reads of several entries may do it)", provisional_level="SHOULD",
             needs=("FLOW", "DISPATCH")),
    Category("permit-freeze", "permits", "FLOW-3", True,
             "permits and backlog both positive for longer than the freeze window with nothing dispatched",
             needs=("SEND", "FLOW", "DISPATCH")),
    Category("duplicate-rebalance", "duplicates", "ALO-3", False,
             "a message consumed OK again after a REVOKE of its queue, or by another client (the queue changed "
             "hands)",
             needs=("CONSUME|" + CLIENT_RECORDED,)),
    Category("duplicate-crash", "duplicates", "ALO-3", False,
             "a message consumed OK again after the first consumer (or the broker) crashed",
             needs=("CONSUME|" + CLIENT_RECORDED,)),
    Category("duplicate-retry", "duplicates", "ALO-3", False,
             "a message consumed OK again after a LATER or ERROR outcome (retry)",
             needs=("CONSUME|" + CLIENT_RECORDED,)),
    Category("duplicate-pop-redelivery", "duplicates", "ALO-3", False,
             "a message consumed OK again after being POPped more than once",
             needs=("CONSUME|" + CLIENT_RECORDED, "POP")),
    Category("duplicate-unknown", "duplicates", "ALO-3", True,
             "a message consumed OK twice by the same consumer with no recorded cause (ALO-3 allows duplicates "
             "only with a cause)",
             needs=("CONSUME|" + CLIENT_RECORDED,)),
)

BY_NAME: dict[str, Category] = {c.name: c for c in CATEGORIES}


def not_judged(events_by_run: Mapping[str, Collection[str]]) -> dict[tuple[str, str], str]:
    """(run, category) -> why that run's events do not let the audit judge the category."""
    return {(run, c.name): why for run, events in events_by_run.items() for c in CATEGORIES
            if (why := c.unjudged_because(events)) is not None}


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
