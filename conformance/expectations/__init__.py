r"""Expectations: reviewed, known failures of a real implementation, kept as data (web-platform-tests' metadata).

One TOML file per implementation and version, ``conformance/expectations/<name>.toml``, named like the
peer (``rocketmq-4.9.7``)::

    implementation = "Apache RocketMQ"
    version = "4.9.7"

    [[expected]]
    id = "OFFSET-4"                       # the requirement that fails
    reason = "why the real system differs, and why the requirement stays as it is"
    source = "upstream file and method (tag) that shows it"
    repro = "one line that reproduces it"
    intermittent = true                   # optional: the deviation shows in some runs only (a race)

An ``intermittent`` entry (web-platform-tests' term for a result that varies between runs) is for a deviation
that depends on an order the implementation does not fix, such as two timers firing in the same millisecond: a
run that fails is ``expected-fail`` and a run that passes is ``pass`` with the entry attached (the deviation was
not shown this time), never ``unexpected-pass``, which would tell the user to remove a correct entry.

A file may also declare how ``mqtck diff`` compares this implementation with the reference: each ``[[diff]]``
entry drops one observed field of one step kind from the comparison, as an allowed difference (``kind =
"allowed"``: the spec leaves it open) or a reviewed real deviation (``kind = "deviation"``)::

    [[diff]]
    step = "pull"                         # a step kind of conformance.diff.steps, or "*"
    field = "min"                         # a field of that step's observation
    kind = "deviation"
    id = "RETAIN-12"                      # the requirement that allows it, or that the deviation breaks
    reason = "why"
    source = "upstream file and method"

An entry may hold only under a condition, ``when = "KEY=VALUE"``: one of the two observations has that value
(``when = "status=OFFSET_OVERFLOW_BADLY"``). ``field = "refused"`` says more: where one side refuses the step
and the other answers it (or refuses it naming another field), the step is not compared at all (a stricter input
rule of the reference, INPUT-4; ``when = "refused=queueOffset"`` narrows it to refusals naming that field).
``field = "malformed"`` does the same for an answer outside the protocol (a real fault, OFFSET-7 of 4.9.7).

An entry may also hold only for some inputs, ``given = "FIELD~REGEX"``: the step's own input FIELD, as the program
wrote it, matches the regular expression (``given = 'expression~ \|\||\|\| '``: a tag list written with blanks).
With a ``given``, ``field = "*"`` excuses the whole step: a deviation that depends on what was asked, not on what
was answered, where any answer-side condition would excuse unrelated divergences too (rocketmq-rust's PULL-8: the
only answer-side sign, NO_MATCHED_MESSAGE, is every filter's). ``field = "*"`` without a ``given`` is refused.

A file may also say how ``mqtck diff`` runs the in-process reference against this implementation: each
``[[reference]]`` entry sets one field of the reference's MessageStoreConfig to a behaviour of this implementation
that the spec allows (a SHOULD it does not follow, listed above too), so that the diff compares what follows
instead of stopping at its first consequence::

    [[reference]]
    setting = "raise_min_of_emptied_queue"   # a field of reference.store.config.MessageStoreConfig
    value = false                            # of that field's type (both checked by conformance.diff.settings)
    id = "RETAIN-9"
    reason = "why"
    source = "upstream file and method"

A file may also tell ``mqtck diff``'s search to step around a reviewed deviation that changes a target's state, so
that every later step would show it again and no ``[[diff]]`` rule can excuse it (rocketmq-rust drops a commit of a
smaller offset, QOFF-1: every later query and pull of that queue then differs). Each ``[[avoid]]`` entry names a
behaviour of :data:`conformance.diff.avoid.BEHAVIOURS` and an ``[[expected]]`` entry of the same file, so that the
gate still reports the deviation; a step of a drawn sequence that would show the behaviour runs on neither target,
and the run counts and reports every step it left out::

    [[avoid]]
    behaviour = "smaller-commit"          # a commit below one the sequence already made for the group's queue
    id = "QOFF-1"                         # an [[expected]] entry of this file
    reason = "why"
    source = "upstream file and function"

A replay runs its program as its file says: a search's replay file lists what that search avoided, and a
hand-written repro (``fixtures/diff``) avoids nothing.

``mqtck conform --expect NAME|FILE`` reports a failure listed here as ``expected-fail`` (it does not gate)
and a listed requirement that passes as ``unexpected-pass`` (the entry is stale: remove it). A MUST that a
real Apache broker fails is first suspected to be a wrong requirement or a wrong test; only what survives
that review becomes an entry.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from conformance import spec
from conformance.cliargs import UsageError

EXPECTATIONS_DIR = Path(__file__).resolve().parent
#: Every entry must say these.
FIELDS = ("id", "reason", "source", "repro")
#: Every ``[[diff]]`` entry must say these; ``kind`` is one of :data:`DIFF_KINDS`.
DIFF_FIELDS = ("step", "field", "kind", "id", "reason", "source")
DIFF_KINDS = ("allowed", "deviation")
#: The ``field`` of a ``[[diff]]`` entry that excuses every field of its step (only with a ``given``).
WHOLE_STEP_FIELD = "*"
#: Every ``[[reference]]`` entry must say these (and ``value``).
REFERENCE_FIELDS = ("setting", "id", "reason", "source")
#: Every ``[[avoid]]`` entry must say these.
AVOID_FIELDS = ("behaviour", "id", "reason", "source")


class ExpectationError(ValueError):
    """An expectations file that cannot be used; the message names the file, the entry and the field."""


@dataclass(frozen=True)
class Expectation:
    id: str
    reason: str
    source: str
    repro: str
    #: The deviation shows in some runs only; a pass is then not a sign that the entry went stale.
    intermittent: bool = False


@dataclass(frozen=True)
class DiffRule:
    """One field ``mqtck diff`` does not compare for one step kind, and why."""

    step: str
    field: str
    kind: str
    id: str
    reason: str
    source: str
    #: ``KEY=VALUE``: the rule holds only where one of the two observations has that value (empty: always).
    when: str = ""
    #: ``FIELD~REGEX``: the rule holds only where the step's input FIELD matches REGEX (empty: always).
    given: str = ""

    def applies(self, step_kind: str) -> bool:
        return self.step in ("*", step_kind)

    def given_condition(self) -> tuple[str, str]:
        """``given`` as (FIELD, REGEX); ("", "") when the rule has none. The one parser of the condition: the
        loader checks it with this, and the diff's comparison applies it."""
        return split_given(self.given)


def split_given(given: str) -> tuple[str, str]:
    """``"FIELD~REGEX"`` as (FIELD, REGEX), the field name stripped; ("", "") for anything else."""
    name, sep, pattern = given.partition("~")
    return (name.strip(), pattern) if sep and name.strip() and pattern else ("", "")


@dataclass(frozen=True)
class ReferenceSetting:
    """One MessageStoreConfig field ``mqtck diff`` sets on the in-process reference run against this implementation."""

    setting: str
    value: object
    id: str
    reason: str
    source: str


@dataclass(frozen=True)
class Avoidance:
    """A behaviour ``mqtck diff``'s search steps around on this implementation: a reviewed deviation (``id``, an
    ``[[expected]]`` entry) that would show in every later step."""

    behaviour: str
    id: str
    reason: str = ""
    source: str = ""


@dataclass(frozen=True)
class Expectations:
    name: str
    implementation: str
    version: str
    entries: dict[str, Expectation]
    diff: tuple[DiffRule, ...] = ()
    reference: tuple[ReferenceSetting, ...] = ()
    avoid: tuple[Avoidance, ...] = ()


def known() -> list[str]:
    return sorted(p.stem for p in EXPECTATIONS_DIR.glob("*.toml"))


def resolve(name_or_file: str) -> Path:
    """A file path as given, or the bundled ``<name>.toml``; ExpectationError naming the known ones."""
    path = Path(name_or_file)
    if path.suffix == ".toml" or path.exists():
        if not path.is_file():
            raise ExpectationError(f"expectations file {name_or_file} does not exist")
        return path
    bundled = EXPECTATIONS_DIR / f"{name_or_file}.toml"
    if not bundled.is_file():
        raise ExpectationError(f"no expectations named {name_or_file!r}; known: {', '.join(known()) or 'none'}")
    return bundled


def load(name_or_file: str) -> Expectations:
    """Load and check an expectations file: every entry names a requirement of the spec, once, with every field."""
    path = resolve(name_or_file)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ExpectationError(f"{path}: not readable TOML: {exc}") from None
    reqs = spec.requirements()
    entries: dict[str, Expectation] = {}
    for n, entry in enumerate(data.get("expected", []), 1):
        _require_strings(path, f"entry {n}", entry, FIELDS)
        rid = entry["id"]
        if rid not in reqs:
            raise ExpectationError(f"{path}: entry {n}: id {rid!r} is not a requirement of the spec")
        if rid in entries:
            raise ExpectationError(f"{path}: entry {n}: id {rid!r} is listed twice")
        intermittent = entry.get("intermittent", False)
        if not isinstance(intermittent, bool):
            raise ExpectationError(f"{path}: entry {n}: field 'intermittent' must be true or false")
        entries[rid] = Expectation(**{k: " ".join(entry[k].split()) for k in FIELDS}, intermittent=intermittent)
    return Expectations(path.stem, str(data.get("implementation", path.stem)), str(data.get("version", "")),
                        entries, _diff_rules(path, data.get("diff", []), reqs),
                        _reference_settings(path, data.get("reference", []), reqs),
                        _avoidances(path, data.get("avoid", []), entries))


def _require_strings(path: Path, where: str, entry: dict[str, object], fields: tuple[str, ...]) -> None:
    """ExpectationError naming the file, the entry (``where``) and the first of ``fields`` that is not a non-empty
    string: the one check every kind of entry makes."""
    for key in fields:
        value = entry.get(key)
        if not isinstance(value, str) or not value.strip():
            raise ExpectationError(f"{path}: {where}: field {key!r} is required (a non-empty string)")


def _diff_rules(path: Path, raw: list[dict[str, object]], reqs: dict[str, spec.Requirement]) -> tuple[DiffRule, ...]:
    rules = []
    for n, entry in enumerate(raw, 1):
        _require_strings(path, f"diff entry {n}", entry, DIFF_FIELDS)
        if entry["kind"] not in DIFF_KINDS:
            kinds = ", ".join(DIFF_KINDS)
            raise ExpectationError(f"{path}: diff entry {n}: kind {entry['kind']!r} is not one of {kinds}")
        if entry["id"] not in reqs:
            raise ExpectationError(f"{path}: diff entry {n}: id {entry['id']!r} is not a requirement of the spec")
        when = entry.get("when", "")
        if not isinstance(when, str) or (when and "=" not in when):
            raise ExpectationError(f"{path}: diff entry {n}: field 'when' must be a string KEY=VALUE")
        given = _given(path, n, entry.get("given", ""))
        if entry["field"] == WHOLE_STEP_FIELD and not given:
            raise ExpectationError(f"{path}: diff entry {n}: field '*' (the whole step) needs a 'given' condition")
        rules.append(DiffRule(**{k: " ".join(str(entry[k]).split()) for k in DIFF_FIELDS}, when=when, given=given))
    return tuple(rules)


def _given(path: Path, n: int, given: object) -> str:
    """A ``given = "FIELD~REGEX"`` condition, checked: a string with a field name and a compilable expression."""
    if not isinstance(given, str):
        raise ExpectationError(f"{path}: diff entry {n}: field 'given' must be a string FIELD~REGEX")
    if not given:
        return ""
    name, pattern = split_given(given)
    if not name:
        raise ExpectationError(f"{path}: diff entry {n}: field 'given' must be a string FIELD~REGEX")
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ExpectationError(f"{path}: diff entry {n}: field 'given': {pattern!r} is not a regular expression: "
                               f"{exc}") from None
    return given


def _reference_settings(path: Path, raw: list[dict[str, object]],
                        reqs: dict[str, spec.Requirement]) -> tuple[ReferenceSetting, ...]:
    """The ``[[reference]]`` entries, checked as far as they can be without the reference: that ``setting`` names a
    MessageStoreConfig field of ``value``'s type is ``mqtck diff``'s check (``conformance.diff.settings``), so that
    the expectations, which every conform run and the report read, never import the reference."""
    out: list[ReferenceSetting] = []
    for n, entry in enumerate(raw, 1):
        _require_strings(path, f"reference entry {n}", entry, REFERENCE_FIELDS)
        name = str(entry["setting"])
        if any(earlier.setting == name for earlier in out):
            raise ExpectationError(f"{path}: reference entry {n}: setting {name!r} is set twice")
        if "value" not in entry:
            raise ExpectationError(f"{path}: reference entry {n}: field 'value' is required")
        if entry["id"] not in reqs:
            raise ExpectationError(f"{path}: reference entry {n}: id {entry['id']!r} is not a requirement of the spec")
        out.append(ReferenceSetting(name, entry["value"], str(entry["id"]),
                                    " ".join(str(entry["reason"]).split()), " ".join(str(entry["source"]).split())))
    return tuple(out)


def _avoidances(path: Path, raw: list[dict[str, object]], entries: dict[str, Expectation]) -> tuple[Avoidance, ...]:
    """The ``[[avoid]]`` entries, checked as far as they can be without the diff: every field, a behaviour named once,
    and an ``id`` that is an ``[[expected]]`` entry of the same file (a deviation the diff steps around is one the
    gate reports). That the behaviour is one the diff knows is ``mqtck diff``'s check (``conformance.diff.avoid``)."""
    out: list[Avoidance] = []
    for n, entry in enumerate(raw, 1):
        _require_strings(path, f"avoid entry {n}", entry, AVOID_FIELDS)
        behaviour = str(entry["behaviour"]).strip()
        if any(earlier.behaviour == behaviour for earlier in out):
            raise ExpectationError(f"{path}: avoid entry {n}: behaviour {behaviour!r} is listed twice")
        if entry["id"] not in entries:
            raise ExpectationError(f"{path}: avoid entry {n}: id {entry['id']!r} is no [[expected]] entry of this "
                                   "file (the diff steps around reviewed deviations only)")
        out.append(Avoidance(behaviour, str(entry["id"]), " ".join(str(entry["reason"]).split()),
                             " ".join(str(entry["source"]).split())))
    return tuple(out)


def load_option(name_or_file: str | None) -> Expectations | None:
    """What ``--expect NAME|FILE`` names, loaded and checked (None when the option is absent); a UsageError (one line,
    exit 2) naming the problem when it cannot be used. Shared by ``mqtck conform`` and its ``--client`` run."""
    if name_or_file is None:
        return None
    try:
        return load(name_or_file)
    except ExpectationError as exc:
        raise UsageError(f"--expect: {exc}") from None
