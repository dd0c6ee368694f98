"""One SparkSession per test process for the audit tests (local, small, quiet)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark")
    from conformance.audit.session import DRIVER_MEMORY, SparkSettings, spark_session

    # The CLI's heap: one driver audits every trace of the worker's tests. With 1 GiB, a GC log showed up to
    # 628 MiB live during the larger audits, and a CI run once lost the driver in the middle of one.
    session = spark_session(SparkSettings(master="local[2]", driver_memory=DRIVER_MEMORY, shuffle_partitions=2))
    yield session
