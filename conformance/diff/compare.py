"""Comparing two observations of one step, after the normalisations a pair of implementations is allowed.

What may legitimately differ between any two implementations is not observed at all (a step records no
message id, commit-log offset, receipt handle, store timestamp, broker name or address, hold duration); the
table :data:`NOT_OBSERVED` says why each is left out. What may differ between the reference and one real
implementation is declared in that implementation's expectations file (``[[diff]]`` entries,
:mod:`conformance.expectations`): an allowed difference or a reviewed deviation, each naming its requirement.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from conformance import expectations
from conformance.diff.steps import STEP_KINDS
from conformance.expectations import WHOLE_STEP_FIELD, DiffRule, ExpectationError

#: What a step never records, and the requirement that lets implementations differ in it.
NOT_OBSERVED: tuple[tuple[str, str, str], ...] = (
    ("message ids", "STORE-3", "the offset message id holds the store host's address and commit-log offset"),
    ("commit-log offsets", "STORE-4", "where a record starts depends on segment size and record layout"),
    ("receipt handles", "PACK-2", "a handle carries the pop time and the broker name"),
    ("store timestamps, hold durations", "LPOLL-3", "real time: only the kind of answer is compared"),
    ("broker names and addresses", "REMOTING-1", "each runner names and places its broker"),
    ("refusal codes", "INPUT-4", "each transport has its own codes; the field a refusal names is compared"),
)


#: The observation field of a refusal (conformance.diff.steps): a rule on it excuses a whole step.
REFUSED = "refused"
#: The observation field of an answer outside the protocol (conformance.diff.runner): a rule on it, too, excuses
#: a whole step where one side answered so and the other did not.
MALFORMED = "malformed"
#: Fields whose rules excuse a whole step.
WHOLE_STEP = (REFUSED, MALFORMED)


@dataclass(frozen=True)
class Difference:
    """The fields in which two observations of one step differ, and the rules that excused others."""

    fields: tuple[str, ...]
    excused: tuple[DiffRule, ...]


def rules_for(expect: str | None) -> tuple[DiffRule, ...]:
    """The ``[[diff]]`` rules of an expectations name or file (none for None), each naming a known step kind
    (ExpectationError naming the file or the rule otherwise)."""
    if expect is None:
        return ()
    known = set(STEP_KINDS) | {"*"}
    out = expectations.load(expect).diff
    for rule in out:
        if rule.step not in known:
            raise ExpectationError(f"diff entry for {rule.field!r}: step {rule.step!r} is not one of "
                                   f"{', '.join(sorted(known))}")
    return out


def _holds(rule: DiffRule, a: dict[str, Any], b: dict[str, Any], inputs: Mapping[str, Any] | None) -> bool:
    """A rule's conditions: ``when = "KEY=VALUE"``, either observation has that value; ``given = "FIELD~REGEX"``,
    the step's input FIELD matches REGEX (never where the inputs are not known). No condition: always."""
    if rule.given:
        name, pattern = rule.given_condition()
        if inputs is None or name not in inputs or not re.search(pattern, str(inputs[name])):
            return False
    if not rule.when:
        return True
    key, _, value = rule.when.partition("=")
    return any(key in obs and str(obs[key]) == value for obs in (a, b))


def compare(step_kind: str, a: dict[str, Any], b: dict[str, Any], rules: tuple[DiffRule, ...],
            inputs: Mapping[str, Any] | None = None) -> Difference:
    """Where ``a`` and ``b`` differ once the rules for ``step_kind`` whose conditions hold (``inputs``: the step's
    own fields, for a ``given``) dropped their fields (a ``refused`` or ``malformed`` rule: the whole step, when one
    side refused it, or answered outside the protocol, and the other did not, or did for another reason; a ``*``
    rule: the whole step, whenever the two differ)."""
    applicable = [rule for rule in rules if rule.applies(step_kind) and _holds(rule, a, b, inputs)]
    for rule in applicable:
        if rule.field in WHOLE_STEP and a.get(rule.field) != b.get(rule.field) or \
                rule.field == WHOLE_STEP_FIELD and a != b:
            return Difference(fields=(), excused=(rule,))
    dropped = {rule.field: rule for rule in applicable if rule.field not in WHOLE_STEP}
    differing = sorted(key for key in set(a) | set(b) if a.get(key) != b.get(key))
    return Difference(
        fields=tuple(key for key in differing if key not in dropped),
        excused=tuple(dropped[key] for key in differing if key in dropped),
    )
