"""Several small queries answered by one Spark job.

Every Spark action is a scheduling round trip and a plan of its own: for the small results an audit
brings to the driver (counts, examples, metric rows) that fixed cost, not the data, is what takes the
time. So the queries are unioned (each tagged with its name) and collected at once, then split again.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

PART = "_part"


def collect_together(queries: dict[str, DataFrame]) -> dict[str, list[Any]]:
    """``{name: rows}`` for ``{name: query}``; a column a query lacks is null in its rows."""
    union: DataFrame | None = None
    for name, query in queries.items():
        tagged = query.withColumn(PART, F.lit(name))
        union = tagged if union is None else union.unionByName(tagged, allowMissingColumns=True)
    out: dict[str, list[Any]] = {name: [] for name in queries}
    if union is not None:
        for row in union.collect():
            out[row[PART]].append(row)
    return out
