"""*bad row*: rows that break trace schema v1 (TRACE-1). Counted per run, each with its reason and the
row as it was read; the rest of the trace is audited without them (:func:`conformance.audit.validate.valid`,
:meth:`conformance.audit.frames.TraceFrames.event`)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from conformance.audit.params import AuditParams
from conformance.audit.schema import findings
from conformance.audit.sequences import REASON, repeated
from conformance.audit.validate import RAW, is_bad, problem
from reference.rules.trace_schema import COLUMN_NAMES

#: The run a bad row is reported under when its own ``run`` is missing.
UNKNOWN_RUN = "(no run)"


def find(rows: DataFrame, params: AuditParams, duplicate_seq: list[int]) -> DataFrame:
    """Bad rows: those :func:`is_bad` finds, and those whose seq repeats (``duplicate_seq``, from the
    catalog). A row bad on both counts is reported once, with its schema problem."""
    twin = repeated(duplicate_seq)
    bad = rows.filter(is_bad() | twin).withColumn("_problem", F.coalesce(problem(), F.when(twin, F.lit(REASON))))
    # A row that is bad only for its seq was well-formed: its text is its columns.
    text = F.coalesce(F.col(RAW), F.to_json(F.struct(*[F.col(c) for c in COLUMN_NAMES])))
    return findings(
        bad, "bad-row", "TRACE-1", params.max_witnesses,
        run=F.coalesce(F.col("run"), F.lit(UNKNOWN_RUN)),
        detail=F.to_json(F.struct(F.col("_problem").alias("reason"))),
        witnesses=F.array(F.substring(text, 1, 2000)),
    )
