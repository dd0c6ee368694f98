"""The simulator's judges and the Spark auditor, compared on the same traces: they must agree exactly.

The pure-Python judges (``reference.sim.judges.check_drop_semantics`` and ``reference.sim.judges.audit_pop``)
decide the simulator's properties; the Spark finders (``conformance.audit``) decide ``mqtck audit``. Both state
the same invariants, so on random traces with injected faults (``mqtck trace synth``: random sizes, seeds and
fault counts) every finding of one must be a finding of the other, keyed by what it is about: the client,
queue and offset of a pull or commit after a drop, the message of a POP anomaly.

Categories compared: pull-after-drop (REBAL-4), commit-after-drop (REBAL-5), early-redelivery (PACK-1),
redelivered-after-ack (PACK-3), never-revived (REVIVE-2). The traces go to Spark as the runs of one trace, so
one audit judges them all. How many: 24 under the ``ci`` Hypothesis profile, 200 under ``deep``
(``HYPOTHESIS_PROFILE=deep pytest tests/audit/test_judges_vs_spark.py``, or ``tox -e deep``).
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import settings

pytest.importorskip("pyspark")

from conformance.audit.job import run_audit  # noqa: E402
from conformance.audit.session import DRIVER_MEMORY, SparkSettings  # noqa: E402
from conformance.audit.synth import synthesize  # noqa: E402
from conformance.audit.synth.faults import InjectionError  # noqa: E402
from reference.sim.judges import TraceIndex, audit_pop, check_drop_semantics  # noqa: E402

DROPS = {"pull after drop": "pull-after-drop", "commit after drop": "commit-after-drop"}
POP = ("early-redelivery", "redelivered-after-ack", "never-revived")
CATEGORIES = (*DROPS.values(), *POP)
#: Traces per run: the deep profile asks for thousands of examples, the CI one for tens.
DEEP_TRACES, CI_TRACES = 200, 24


def _traces() -> int:
    return DEEP_TRACES if settings.default.max_examples >= 1_000 else CI_TRACES


def _synthesize(out: Path, index: int) -> dict[str, int]:
    """Run ``r<index>``: a random size, seed and fault mix; a mix the workload has no room for is cut down."""
    rng = random.Random(index)
    inject = {c: rng.randrange(0, 4 if "drop" in c else 2) for c in CATEGORIES}
    events = rng.choice([8_000, 12_000, 16_000])
    while True:
        try:
            synthesize(out, events, seed=1_000 + index, inject=inject, run=f"r{index}")
            return inject
        except InjectionError as exc:
            kind = next(k for k in inject if f" {k} faults" in str(exc))
            inject[kind] -= 1


def _judged(rows: list[dict]) -> Counter:
    """What the simulator's judges find in one run, keyed as the auditor's findings are."""
    found: Counter = Counter()
    for f in check_drop_semantics(TraceIndex(rows)):
        request = f.witnesses[-1]
        found[(DROPS[f.kind], (f.client_id, request["topic"], request["queue_id"], request["offset"]))] += 1
    for group in sorted({r["group"] for r in rows if r["event"] == "POP"}):
        for f in audit_pop(rows, group):
            if f.kind in POP:
                found[(f.kind, f.msg_id)] += 1
    return found


def test_the_simulators_judges_and_the_spark_audit_agree_on_random_faulty_traces(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    trace = tmp_path / "trace"
    injected = {f"r{i}": _synthesize(trace, i) for i in range(_traces())}
    report = tmp_path / "report"
    run_audit(trace, report, settings=SparkSettings(master="local[2]", driver_memory=DRIVER_MEMORY,
                                                    shuffle_partitions=2))
    audited: dict[str, Counter] = {run: Counter() for run in injected}
    for f in ds.dataset(str(report / "findings"), format="parquet").to_table().to_pylist():
        if f["category"] in CATEGORIES:
            about = f["msg_id"] if f["category"] in POP else (f["client_id"], f["topic"], f["queue_id"], f["offset"])
            audited[f["run"]][(f["category"], about)] += 1
    agreed = 0
    for run, faults in injected.items():
        rows = sorted(pq.read_table(trace / f"run={run}").to_pylist(), key=lambda r: (r["ts"], r["source"], r["seq"]))
        judged = _judged(rows)
        assert judged == audited[run], (
            f"{run} (inject {faults}): only the judges: {dict(judged - audited[run])}; "
            f"only Spark: {dict(audited[run] - judged)}"
        )
        assert sum(judged.values()) == sum(faults.values()), f"{run}: both must find exactly the {faults} injected"
        agreed += sum(judged.values())
    assert agreed > 0, "the traces carried faults to agree on"
