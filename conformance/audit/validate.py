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

from functools import reduce

from pyspark.sql import Column
from pyspark.sql import functions as F

from conformance.audit.schema import EVENTS
from reference.rules.trace_schema import BASE_COLUMNS, COLUMN_NAMES, EVENT_REQUIRED, SCHEMA_VERSION

#: SUBSCRIBE's ``model`` values (trace-schema.md, Columns).
MODELS = ("CLUSTERING", "BROADCASTING")
#: The load-time problem of a row (null when none); every loaded frame has it.
BAD_REASON = "_bad_reason"
#: The offending row as text (JSON), for examples; only filled for bad rows.
RAW = "_raw"


def _base_problem() -> Column:
    checks = [F.when(F.col(c).isNull(), F.lit(f"missing column: {c}")) for c in BASE_COLUMNS]
    checks.append(
        F.when(
            F.col("schema_version") != SCHEMA_VERSION,
            F.concat(F.lit(f"schema_version must be {SCHEMA_VERSION}, got "), F.col("schema_version").cast("string")),
        )
    )
    checks.append(F.when(~F.col("event").isin(*EVENTS), F.concat(F.lit("unknown event: "), F.col("event"))))
    return F.coalesce(*checks)


def _event_problem(event: str) -> Column | None:
    checks = [F.when(F.col(c).isNull(), F.lit(f"{event} requires {c}")) for c in EVENT_REQUIRED[event]]
    if event == "SUBSCRIBE":
        checks.append(F.when(~F.col("model").isin(*MODELS), F.lit("model must be CLUSTERING or BROADCASTING")))
    return F.coalesce(*checks) if checks else None


def _present_mask() -> Column:
    """One bit per schema column (in COLUMN_NAMES order) set when the row has a value there."""
    bits = [F.shiftleft(F.col(c).isNotNull().cast("long"), i) for i, c in enumerate(COLUMN_NAMES)]
    return reduce(lambda a, b: a + b, bits)


def _required_masks() -> dict[str, int]:
    index = {c: i for i, c in enumerate(COLUMN_NAMES)}
    return {e: sum(1 << index[c] for c in (*BASE_COLUMNS, *req)) for e, req in EVENT_REQUIRED.items()}


def is_bad() -> Column:
    """True for a bad row: the same rows :func:`problem` explains, found with a few integer operations
    per row (required columns as a bit mask per event) so that the full explanation, a long expression,
    is only computed for the rows that need one."""
    masks = _required_masks()
    required = F.create_map(*[x for e, m in sorted(masks.items()) for x in (F.lit(e), F.lit(m))])[F.col("event")]
    missing = (_present_mask().bitwiseAND(required) != required)
    bad_model = (F.col("event") == "SUBSCRIBE") & ~F.coalesce(F.col("model").isin(*MODELS), F.lit(False))
    return F.coalesce(
        F.col(BAD_REASON).isNotNull() | required.isNull() | missing
        | (F.col("schema_version") != SCHEMA_VERSION) | bad_model,
        F.lit(True),
    )


def problem() -> Column:
    """Why a loaded row is bad (a short sentence naming the column and the rule), or null."""
    per_event = F.lit(None).cast("string")
    for event in EVENTS:
        check = _event_problem(event)
        if check is not None:
            per_event = F.when(F.col("event") == event, check).otherwise(per_event)
    return F.coalesce(F.col(BAD_REASON), _base_problem(), per_event)


def valid(event: str) -> Column:
    """True for a good row of ``event``: the filter every derivation reads its input with."""
    conditions = [F.col("event") == event, F.col(BAD_REASON).isNull(), F.col("schema_version") == SCHEMA_VERSION]
    conditions += [F.col(c).isNotNull() for c in (*BASE_COLUMNS, *EVENT_REQUIRED[event])]
    if event == "SUBSCRIBE":
        conditions.append(F.col("model").isin(*MODELS))
    return reduce(lambda a, b: a & b, conditions)
