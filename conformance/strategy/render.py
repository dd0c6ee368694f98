"""Show a check's results: a rich table for people, JSON for machines.

A counterexample is printed as the group it happened in (queues, consumers, params) and one row per
consumer with what the property expected and what the strategy answered, queues written compactly
(``broker-a:0-3,5``: queues 0, 1, 2, 3 and 5 of broker-a).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from conformance.strategy.model import Outcome
from conformance.strategy.report import FAIL, PASS, CheckReport, Failure, PropertyResult
from conformance.strategy.scenario import Scenario
from reference.allocation import MessageQueue

_STYLE = {PASS: "green", FAIL: "bold red"}
#: Longest error text shown in a table cell.
ERROR_CHARS = 90


def format_queues(queues: Sequence[MessageQueue], with_topic: bool) -> str:
    """``broker-a:0-3,5 broker-b:1`` in the order given (``topic/broker:…`` if topics vary)."""
    groups: list[tuple[str, list[int]]] = []
    for mq in queues:
        key = f"{mq.topic}/{mq.broker_name}" if with_topic else mq.broker_name
        if groups and groups[-1][0] == key:
            groups[-1][1].append(mq.queue_id)
        else:
            groups.append((key, [mq.queue_id]))
    return " ".join(f"{key}:{_runs(ids)}" for key, ids in groups)


def _runs(ids: list[int]) -> str:
    parts: list[str] = []
    start = prev = ids[0]
    for qid in [*ids[1:], None]:
        if qid is not None and qid == prev + 1:
            prev = qid
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if qid is not None:
            start = prev = qid
    return ",".join(parts)


def _cell(value: Outcome | str | None, with_topic: bool) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if value.defect is not None:
        return f"defect: {value.defect}"
    if value.error is not None:
        return f"refused: {value.error[:ERROR_CHARS]}"
    return format_queues(value.queues, with_topic) if value.queues else "—"


def _multi_topic(scenario: Scenario) -> bool:
    return len({mq.topic for mq in scenario.mq_all}) > 1


def render_text(report: CheckReport, console: Console) -> None:
    console.print(
        f"[bold]mqtck strategy check[/bold] {report.strategy}  ({report.declaration}); "
        f"seed {report.seed}, up to {report.max_examples} examples per property"
    )
    table = Table(box=box.SIMPLE_HEAD)
    for header, justify in (("property", "left"), ("result", "left"), ("examples", "right"),
                            ("time", "right"), ("detail", "left")):
        table.add_column(header, justify=justify)  # type: ignore[arg-type]
    for r in report.results:
        table.add_row(r.name, Text(r.status, style=_STYLE.get(r.status, "yellow")), str(r.examples),
                      f"{r.seconds:.1f}s", _detail(r))
    console.print(table)
    for r in report.results:
        if r.failure is not None:
            _render_failure(r, r.failure, console)
    failed = sum(r.status == FAIL for r in report.results)
    verdict = "[green]all declared properties hold[/green]" if not failed else (
        f"[bold red]{failed} of {len(report.results)} properties failed[/bold red]")
    console.print(f"{verdict} (exit {report.exit_code}, {report.seconds:.1f}s). "
                  f"Reproduce with --seed {report.seed} --examples {report.max_examples}.")


def _detail(r: PropertyResult) -> str:
    parts = [r.failure.summary if r.failure else (r.observation or r.summary)]
    if r.failure and r.observation:
        parts.append(r.observation)
    if r.note:
        parts.append(r.note)
    return "; ".join(parts)


def _render_failure(r: PropertyResult, failure: Failure, console: Console) -> None:
    sc = failure.scenario
    topics = _multi_topic(sc)
    console.print(f"\n[bold red]{r.name}[/bold red]: {failure.summary}")
    console.print(f"  counterexample after {r.examples} examples (shrunk): group {sc.consumer_group!r}, "
                  f"params {sc.params}", markup=False)
    console.print(f"  mqAll ({len(sc.mq_all)}): {format_queues(sc.mq_all, True) or '(empty)'}", markup=False)
    console.print(f"  cidAll ({len(sc.cid_all)}): {', '.join(sc.cid_all) or '(empty)'}", markup=False)
    with_expected = any(row.expected is not None for row in failure.rows)
    table = Table(box=box.ROUNDED, padding=(0, 1))
    table.add_column("consumer")
    if with_expected:
        table.add_column(failure.columns[0])
    table.add_column(failure.columns[1])
    table.add_column("note", style="red")
    for row in failure.rows:
        cells = [Text(row.consumer)]
        if with_expected:
            cells.append(Text(_cell(row.expected, topics)))
        table.add_row(*cells, Text(_cell(row.actual, topics)), Text(row.note))
    console.print(table)
    for problem in failure.problems[1:6]:
        console.print(f"  - {problem}", markup=False)
    if len(failure.problems) > 6:
        console.print(f"  … and {len(failure.problems) - 6} more")


def failure_text(name: str, failure: Failure, examples: int = 0, width: int = 120) -> str:
    """A counterexample as plain text (for assertion messages)."""
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    _render_failure(PropertyResult(name, "", True, FAIL, examples, failure=failure), failure, console)
    return console.export_text()


def _outcome_json(value: Outcome | str | None) -> Any:
    if value is None or isinstance(value, str):
        return value
    if value.defect is not None:
        return {"defect": value.defect}
    if value.error is not None:
        return {"error": value.error}
    return {"result": [mq.to_json() for mq in value.queues]}


def failure_json(failure: Failure) -> dict[str, Any]:
    return {
        "summary": failure.summary,
        "scenario": failure.scenario.to_json(),
        "columns": list(failure.columns),
        "rows": [
            {"consumer": r.consumer, "expected": _outcome_json(r.expected), "actual": _outcome_json(r.actual),
             "note": r.note}
            for r in failure.rows
        ],
        "problems": list(failure.problems),
    }


def report_json(report: CheckReport) -> dict[str, Any]:
    return {
        "strategy": report.strategy,
        "declaration": report.declaration,
        "seed": report.seed,
        "maxExamples": report.max_examples,
        "seconds": round(report.seconds, 3),
        "passed": report.passed,
        "exitCode": report.exit_code,
        "properties": [_property_json(r) for r in report.results],
    }


def _property_json(r: PropertyResult) -> dict[str, Any]:
    return {
        "name": r.name,
        "summary": r.summary,
        "required": r.required,
        "status": r.status,
        "examples": r.examples,
        "seconds": round(r.seconds, 3),
        "observation": r.observation,
        "note": r.note,
        "counterexample": failure_json(r.failure) if r.failure else None,
    }

