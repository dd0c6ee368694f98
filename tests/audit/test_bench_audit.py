"""``mqtck bench audit``: a small synthetic trace audited end to end, its faults found exactly, and the time split
the bench reports (the phases, the JVM's CPU by what its threads do) present and consistent."""

from __future__ import annotations

import json

from conformance.cli import main


def test_bench_audit_finds_exactly_and_splits_the_time(spark, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "bench.json"
    assert main(["bench", "audit", "--events", "6000", "--inject", "lost=2,unsafe-commit=2",
                 "--keep", str(tmp_path / "run"), "--out", str(out)]) == 0
    result = json.loads(out.read_text())["result"]
    assert result["found_exactly"], result["findings"]
    assert result["findings"]["run-0"] == {"lost": 2, "unsafe-commit": 2}
    phases = result["audit_phases_s"]
    assert {"load", "plan", "derive", "summary"} <= set(phases)
    assert sum(phases.values()) <= result["audit_seconds"] + 0.1
    roles = result["audit_jvm_cpu_by_role_s"]
    # Every audit compiles (C1 at least): a role missing here is a thread name the split does not know.
    assert roles["tasks"] > 0 and roles["planning"] > 0 and roles["jit"] > 0
    assert sum(roles.values()) <= result["audit_jvm_cpu_seconds"] + 1.0
