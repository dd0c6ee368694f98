"""``pop_order`` over ``grpc://``: the reference served with its remoting and gRPC fronts and judged on POP-13 and
POP-14 through the ReceiveMessage of a FIFO group. What the v5 wire cannot show (restNum, orderCountInfo) must come
out not applicable with its reason, never a pass; the rest is judged."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.req("POP-13.blocked", "POP-13.again", "POP-13.no-retry", "POP-14.count", "POP-14.ack")
def test_conform_over_grpc_judges_the_ordered_pop_and_calls_what_v5_cannot_show_not_applicable(
        tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "conform", "--target", "grpc", "--only", "POP-13", "POP-14",
         "--report-dir", str(tmp_path), "--json"], capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert "pop_order" in summary["capabilities"]
    by_id = {r["id"]: r for r in summary["requirements"]}
    clauses = {(rid, c["key"]): c for rid in ("POP-13", "POP-14") for c in by_id[rid]["clauses"]}
    for key in (("POP-13", "no-retry"), ("POP-13", "blocked"), ("POP-13", "again"), ("POP-14", "count"),
                ("POP-14", "ack")):
        assert clauses[key]["status"] == "pass", clauses[key]
    assert "restNum" in clauses[("POP-13", "rest-num")]["reason"]
    assert "orderCountInfo" in clauses[("POP-13", "count")]["reason"]
    assert {clauses[("POP-13", k)]["status"] for k in ("rest-num", "count")} == {"not-applicable"}
    assert (by_id["POP-13"]["status"], by_id["POP-14"]["status"]) == ("partial", "pass")
