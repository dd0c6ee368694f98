"""One SparkSession per test process for the audit tests (local, small, quiet)."""

from __future__ import annotations

import pytest

#: The test workers' driver heap.
TEST_DRIVER_MEMORY = "2g"


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark")
    from conformance.audit.session import SparkSettings, spark_session

    # One driver audits every trace of the worker's tests, so it gets more heap than the CLI's one audit
    # (DRIVER_MEMORY): with 1 GiB a GC log showed up to 628 MiB live during the larger audits, a CI run once
    # lost the driver in the middle of one, and another spent 30 min in full GCs at the CLI's 1280 MiB when
    # the worker happened to run more of the audit tests.
    # The tests' traces are small: the short-lived audit's JIT (input_bytes=0).
    session = spark_session(SparkSettings(master="local[2]", driver_memory=TEST_DRIVER_MEMORY, shuffle_partitions=2,
                                          input_bytes=0))
    yield session
