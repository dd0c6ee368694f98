"""The driver JVM a short-lived audit runs in (``conformance.audit.session``)."""

from __future__ import annotations

MIB = 1024 * 1024


def test_a_short_lived_driver_keeps_room_to_compile_audit_after_audit(spark) -> None:
    """The test workers' driver is a short-lived one (C1 only) that audits trace after trace, as any process
    auditing several small traces does. C1 alone reserves a 48 MiB code cache, which such a driver filled at its
    fourth 20K-event audit; HotSpot then turned its compiler off and every later audit ran interpreted. The
    driver's code heaps must have the tiered size."""
    from conformance.audit.session import SHORT_CODE_CACHE_MIB

    factory = spark._jvm.java.lang.management.ManagementFactory
    flags = list(factory.getRuntimeMXBean().getInputArguments())
    assert "-XX:TieredStopAtLevel=1" in flags  # the tests' driver is a short-lived audit's
    reserved = sum(pool.getUsage().getMax() for pool in factory.getMemoryPoolMXBeans()
                   if pool.getName().startswith(("CodeHeap", "CodeCache")))
    assert reserved >= SHORT_CODE_CACHE_MIB * MIB, f"code cache {reserved / MIB:.0f} MiB"
