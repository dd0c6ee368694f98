"""One SparkSession per test process for the audit tests (local, small, quiet)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark")
    from conformance.audit.session import SparkSettings, spark_session

    session = spark_session(SparkSettings(master="local[2]", driver_memory="1g", shuffle_partitions=2))
    yield session
