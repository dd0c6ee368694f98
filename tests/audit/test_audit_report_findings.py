"""The audit report's findings as a reader gets them, first and as a table: when (from the run's start, in s or ms),
what, where, which client (never an empty name) and which requirement, the trace rows behind a click. Built from a
summary as the audit writes it, without Spark."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from conformance.audit.report import finding_rows, since_start, write_outputs

LOST = {"run": "run-0", "requirement": "ALO-1", "ts": 698_505_000, "group": "OrderShipping", "topic": "OrderTopic",
        "broker": "broker-b", "queue_id": 0, "offset": 229, "msg_id": "ORDB00-229",
        "detail": {"consumer": "group (clustering)", "start_offset": 0, "age_at_horizon_us": 111_495_000},
        "witnesses": [{"event": "SEND", "ts": 698_505_000, "topic": "OrderTopic", "msg_id": "ORDB00-229"},
                      {"event": "ASSIGN", "ts": 1_807_000, "group": "OrderShipping", "client_id": "OrderShipping-c1"}]}
DUPLICATE = {"run": "run-0", "requirement": "ALO-3", "ts": 2_100, "group": "AuditCache", "client_id": "AuditCache-c0",
             "topic": "AuditTopic", "broker": "broker-a", "queue_id": 1, "offset": 179, "msg_id": "AUDA01-179",
             "value_ms": 4.3, "detail": {"cause": "unknown"}, "witnesses": []}


def _summary() -> dict[str, Any]:
    category = {"count": 0, "requirement": "ALO-1", "level": "MUST", "in_spec": True, "violation": True,
                "family": "messages", "examples": [], "judged": True}
    cats = {"lost": {**copy.deepcopy(category), "count": 1, "examples": [LOST]},
            "duplicate-unknown": {**copy.deepcopy(category), "count": 1, "requirement": "ALO-3", "violation": False,
                                  "examples": [DUPLICATE]}}
    return {"trace": "t", "format": "jsonl", "params": {}, "exit_code": 1, "must_violations": 1,
            "totals": {}, "not_judged": {}, "provisional_requirements": [], "notes": [],
            "runs": {"run-0": {"rows": 10, "first_ts": 0, "horizon": 810_000_000, "categories": cats}}}


def test_a_findings_time_is_from_the_runs_start_in_seconds_or_milliseconds() -> None:
    assert since_start(698_505_000, 0) == "+698.505 s"
    assert since_start(1_002_100, 1_000_000) == "+2.1 ms"
    assert since_start(None, 0) == "—"


def test_a_clustering_loss_names_the_group_never_an_empty_client() -> None:
    lost, duplicate = finding_rows(_summary())
    assert lost["category"] == "lost", "a violation comes before a notice"
    assert lost["client"] == "— (clustering: the group's to consume; its queue was first given to OrderShipping-c1)"
    assert lost["where"] == "OrderTopic/broker-b/0 @ 229 · group OrderShipping · msg ORDB00-229"
    assert (lost["when"], lost["requirement"]) == ("+698.505 s", "ALO-1")
    assert len(lost["raw"]) == 3 and '"client": ""' not in "".join(lost["raw"])
    assert (duplicate["client"], duplicate["when"], duplicate["what"]) == (
        "AuditCache-c0", "+2.1 ms", "duplicate-unknown (4.3 ms)")


def test_the_report_opens_with_the_findings_table_and_keeps_the_rows_behind_a_click(tmp_path: Path) -> None:
    write_outputs(tmp_path, _summary(), {})
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert page.index('id="findings"') < page.index("<h2>Totals</h2>")
    table = page[page.index('<table class="findings">'):]
    table = table[:table.index("</table>")]
    assert "+698.505 s" in table and "698505000" not in table.split("<details>")[0]
    assert "<details><summary>3 rows</summary>" in table
