"""*bad row*: rows that break trace schema v1 (TRACE-1). Counted per run, each with its reason and the
row as it was read; the rest of the trace is audited without them (:func:`conformance.audit.validate.valid`)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from conformance.audit.params import AuditParams
from conformance.audit.schema import findings
from conformance.audit.validate import RAW, is_bad, problem

#: The run a bad row is reported under when its own ``run`` is missing.
UNKNOWN_RUN = "(no run)"


def find(rows: DataFrame, params: AuditParams) -> DataFrame:
    bad = rows.filter(is_bad()).withColumn("_problem", problem())
    return findings(
        bad, "bad-row", "TRACE-1", params.max_witnesses,
        run=F.coalesce(F.col("run"), F.lit(UNKNOWN_RUN)),
        detail=F.to_json(F.struct(F.col("_problem").alias("reason"))),
        witnesses=F.array(F.substring(F.col(RAW), 1, 2000)),
    )
