"""Row validation against trace schema v1, as Spark column expressions (no UDFs).

A row is *bad* when it is not a JSON object, carries a column schema v1 does not have, a value of the
wrong type, a null base column, a ``schema_version`` other than 1, an unknown event, or lacks a column
its event requires (``reference.rules.trace_schema.EVENT_REQUIRED``), or when a SUBSCRIBE names a model other than
CLUSTERING / BROADCASTING. Bad rows are counted and reported (category ``bad-row``, TRACE-1) and left
out of every derivation; the rest of the trace is audited as usual.

Problems that depend on the input format (not an object, unknown or mistyped columns) are found while
loading (:mod:`conformance.audit.load`) and arrive in the ``_bad_reason`` column; the checks here work
on typed columns and are the same for every format. :func:`valid` is what each derivation filters
with, so a row is either audited or counted as bad, never both.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from conformance.audit.schema import EVENTS
from conformance.audit.sqltext import coalesce, name, one_of, text, when
from reference.rules.trace_schema import BASE_COLUMNS, COLUMN_NAMES, EVENT_REQUIRED, SCHEMA_VERSION

#: SUBSCRIBE's ``model`` values (trace-schema.md, Columns).
MODELS = ("CLUSTERING", "BROADCASTING")
#: The load-time problem of a row (null when none); every loaded frame has it.
BAD_REASON = "_bad_reason"
#: The offending row as text (JSON), for examples; only filled for bad rows.
RAW = "_raw"


# The expressions below are SQL text (conformance.audit.sqltext): built from Column objects they cost a py4j round
# trip per node (problem() alone some 1,700), and every derivation filters with valid().


def _base_problem() -> str:
    checks = [when(f"{name(c)} IS NULL", text(f"missing column: {c}")) for c in BASE_COLUMNS]
    checks.append(when(f"`schema_version` != {SCHEMA_VERSION}",
                        f"concat({text(f'schema_version must be {SCHEMA_VERSION}, got ')}, "
                        "CAST(`schema_version` AS STRING))"))
    checks.append(when(f"NOT {one_of('`event`', EVENTS)}", f"concat({text('unknown event: ')}, `event`)"))
    return coalesce(*checks)


def _event_problem(event: str) -> str | None:
    checks = [when(f"{name(c)} IS NULL", text(f"{event} requires {c}")) for c in EVENT_REQUIRED[event]]
    if event == "SUBSCRIBE":
        checks.append(when(f"NOT {one_of('`model`', MODELS)}", text("model must be CLUSTERING or BROADCASTING")))
    return coalesce(*checks) if checks else None


def _present_mask() -> str:
    """One bit per schema column (in COLUMN_NAMES order) set when the row has a value there."""
    return " + ".join(f"shiftleft(CAST({name(c)} IS NOT NULL AS BIGINT), {i})" for i, c in enumerate(COLUMN_NAMES))


def _required_masks() -> dict[str, int]:
    index = {c: i for i, c in enumerate(COLUMN_NAMES)}
    return {e: sum(1 << index[c] for c in (*BASE_COLUMNS, *req)) for e, req in EVENT_REQUIRED.items()}


def is_bad() -> Column:
    """True for a bad row: the same rows :func:`problem` explains, found with a few integer operations
    per row (required columns as a bit mask per event) so that the full explanation, a long expression,
    is only computed for the rows that need one."""
    masks = _required_masks()
    required = f"map({', '.join(f'{text(e)}, {m}' for e, m in sorted(masks.items()))})[`event`]"
    missing = f"(({_present_mask()}) & {required}) != {required}"
    bad_model = f"(`event` = 'SUBSCRIBE' AND NOT coalesce({one_of('`model`', MODELS)}, false))"
    either = " OR ".join((f"{name(BAD_REASON)} IS NOT NULL", f"{required} IS NULL", f"({missing})",
                          f"`schema_version` != {SCHEMA_VERSION}", bad_model))
    return F.expr(f"coalesce({either}, true)")


def problem() -> Column:
    """Why a loaded row is bad (a short sentence naming the column and the rule), or null."""
    per_event = [(e, check) for e in EVENTS if (check := _event_problem(e)) is not None]
    by_event = "CASE " + " ".join(f"WHEN `event` = {text(e)} THEN {check}" for e, check in per_event) + " END"
    return F.expr(coalesce(name(BAD_REASON), _base_problem(), by_event))


def valid(event: str) -> Column:
    """True for a good row of ``event``: the filter every derivation reads its input with."""
    conditions = [f"`event` = {text(event)}", f"{name(BAD_REASON)} IS NULL", f"`schema_version` = {SCHEMA_VERSION}"]
    conditions += [f"{name(c)} IS NOT NULL" for c in (*BASE_COLUMNS, *EVENT_REQUIRED[event])]
    if event == "SUBSCRIBE":
        conditions.append(one_of("`model`", MODELS))
    return F.expr(" AND ".join(conditions))
