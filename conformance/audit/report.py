"""The audit's outputs: ``summary.json`` (per run, per category: count, requirement, examples) and a
self-contained ``report.html`` with the plots; and the exit code they imply.

The counts are exact (an aggregation over every finding); the examples are the earliest findings of
each category, with their witness events. Every category appears in every run, with count 0 when
nothing was found, so a reader (or a CI script) never has to guess whether a check ran.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from conformance.audit import svg
from conformance.audit.badrows import UNKNOWN_RUN
from conformance.audit.categories import BY_NAME, CATEGORIES, provisional_ids, resolve
from conformance.audit.params import AuditParams

SUMMARY_VERSION = 1
#: Runs drawn in report.html (summary.json has them all).
PLOTTED_RUNS = 6


def findings_queries(findings: DataFrame, examples: int) -> dict[str, DataFrame]:
    """The small queries over the findings the summary needs, for one job (:mod:`conformance.audit.batch`):
    counts per run/category/requirement, the first ``examples`` findings per run/category, and the queues
    with an ownership overlap (drawn first in the report's timeline)."""
    counts = findings.groupBy("run", "category", "requirement").count()
    order = Window.partitionBy("run", "category").orderBy("ts", "group", "client_id", "msg_id", "offset")
    first = findings.withColumn("_n", F.row_number().over(order)).filter(F.col("_n") <= examples).drop("_n")
    overlaps = findings.filter("category = 'ownership-overlap'").select(
        "run", "group", "topic", "broker", "queue_id").distinct()
    return {"count": counts, "example": first, "overlap": overlaps}


def overlap_queues(rows: list[Any]) -> dict[str, list[tuple]]:
    """run -> (group, topic, broker, queue_id) of the ``overlap`` rows of :func:`findings_queries`."""
    out: dict[str, list[tuple]] = {}
    for r in rows:
        out.setdefault(r["run"], []).append((r["group"], r["topic"], r["broker"], r["queue_id"]))
    return out


def _example(row: Any) -> dict[str, Any]:
    out = {k: v for k, v in row.asDict().items()
           if v is not None and k not in ("witnesses", "detail", "category") and not k.startswith("_")}
    if row["detail"]:
        out["detail"] = json.loads(row["detail"])
    out["witnesses"] = [_parse(w) for w in row["witnesses"] or []]
    return out


def _parse(text: str) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


def build_summary(
    trace: str, fmt: str, params: AuditParams, runs: dict[str, dict[str, Any]], counts: list[Any],
    examples: list[Any], notes: list[str], metrics: dict[str, Any],
    unjudged: dict[tuple[str, str], str] | None = None,
) -> dict[str, Any]:
    """summary.json: per run and category the findings' count, level and first examples, or why the run's
    events do not let the category be judged (``unjudged``: its findings were withheld)."""
    unjudged = unjudged or {}
    per_run: dict[str, dict[str, Any]] = {}
    run_names = sorted(set(runs) | {c["run"] for c in counts})
    for run in run_names:
        cats = {}
        for cat in CATEGORIES:
            req = resolve(cat.requirement, cat)
            cats[cat.name] = {
                "count": 0, "requirement": cat.requirement, "level": req.level, "in_spec": req.in_spec,
                "violation": cat.violation, "family": cat.family, "examples": [],
                "judged": (run, cat.name) not in unjudged,
            }
            if (run, cat.name) in unjudged:
                cats[cat.name]["not_judged_because"] = unjudged[(run, cat.name)]
        per_run[run] = {**runs.get(run, {}), "categories": cats}
    violations = 0
    totals: dict[str, int] = defaultdict(int)
    for c in counts:
        cat = BY_NAME[c["category"]]
        entry = per_run[c["run"]]["categories"][cat.name]
        entry["count"] += c["count"]
        totals[cat.name] += c["count"]
        if c["requirement"] != cat.requirement:
            entry.setdefault("by_requirement", {})[c["requirement"]] = c["count"]
        if cat.violation and resolve(c["requirement"], cat).level == "MUST":
            violations += c["count"]
    for row in examples:
        per_run[row["run"]]["categories"][row["category"]]["examples"].append(_example(row))
    for run, data in per_run.items():
        data["wake_latency"] = metrics.get("wake_latency", {}).get(run)
    return {
        "summary_version": SUMMARY_VERSION,
        "trace": trace,
        "format": fmt,
        "params": params.to_dict(),
        "exit_code": 1 if violations else 0,
        "must_violations": violations,
        "totals": {c.name: totals.get(c.name, 0) for c in CATEGORIES},
        "not_judged": {c.name: {run: unjudged[(run, c.name)] for run in run_names if (run, c.name) in unjudged}
                       for c in CATEGORIES if any((run, c.name) in unjudged for run in run_names)},
        "provisional_requirements": provisional_ids(),
        "notes": notes,
        "runs": per_run,
    }


def _plots(summary: dict[str, Any], metrics: dict[str, Any]) -> dict[str, list[tuple[str, str]]]:
    plots: dict[str, list[tuple[str, str]]] = {}
    for run in [r for r in summary["runs"] if r != UNKNOWN_RUN][:PLOTTED_RUNS]:
        out = []
        series = metrics.get("messages", {}).get(run, {})
        unseen = {g: [(p["t_s"], p["unseen"]) for p in pts] for g, pts in series.items()}
        lag = {g: [(p["t_s"], p["lag_ms"]) for p in pts if p["lag_ms"] is not None] for g, pts in series.items()}
        # A chart is drawn only when it has something to show: an empty frame reads as a broken report.
        if any(unseen.values()):
            out.append(("unseen", svg.line_chart("Unseen messages (expected, sent, not yet consumed OK)", unseen,
                                                 "time since first event (s)", "messages")))
        if any(lag.values()):
            out.append(("lag", svg.line_chart("Consumer lag (mean SEND to first OK, by consumption time)", lag,
                                              "time since first event (s)", "ms")))
        cats = summary["runs"][run]["categories"]
        dups = [(name.removeprefix("duplicate-"), cats[name]["count"])
                for name in cats if name.startswith("duplicate-")]
        if any(count for _, count in dups):
            out.append(("duplicates", svg.bar_chart("Duplicates by cause (red: no recorded cause)", dups,
                                                    "consumptions", [name == "unknown" for name, _ in dups])))
        wake = summary["runs"][run].get("wake_latency") or {"buckets": []}
        bars = [(f"<={b['le_ms']}" if b["le_ms"] is not None else ">", b["count"]) for b in wake["buckets"]]
        if any(count for _, count in bars):
            out.append(("wake", svg.bar_chart("Long-poll wake latency (ms)", bars, "answers")))
        lanes = metrics.get("ownership", {}).get(run, [])
        spans = [s for lane in lanes for s in lane["spans"]]
        if spans:
            t0 = min(s["start"] for s in spans)
            t1 = max(s["end"] for s in spans)
            overlap_us = summary["params"]["overlap_window_ms"] * 1000
            rows = []
            for lane in lanes:
                drawn = []
                for s in lane["spans"]:
                    bad = any(o is not s and o["client"] != s["client"]
                              and min(o["end"], s["end"]) - max(o["start"], s["start"]) > overlap_us
                              for o in lane["spans"])
                    drawn.append(((s["start"] - t0) / 1e6, (s["end"] - t0) / 1e6, s["client"], bad))
                rows.append((lane["queue"], drawn))
            out.append(("ownership", svg.timeline("Queue ownership", rows, 0,
                                                  (t1 - t0) / 1e6, "seconds")))
        plots[run] = out
    return plots


def since_start(ts_us: int | None, first_us: int | None) -> str:
    """A finding's time as a reader follows a run: from the trace's first event, in s or ms (``+698.330 s``),
    not as the raw microseconds since the epoch the rows carry."""
    if ts_us is None:
        return "—"
    if first_us is None:
        return f"{ts_us / 1e6:.3f} s"
    offset = (ts_us - first_us) / 1e6
    return f"+{offset:.3f} s" if abs(offset) >= 1 else f"+{offset * 1000:.1f} ms"


def _client(example: dict[str, Any]) -> str:
    """Which client a finding is about, never an empty name: clustering, a message is the group's to consume (no
    one client was answerable), so the finding says so, and who was first given its queue."""
    named = example.get("client_id") or (example.get("detail") or {}).get("client")
    if named:
        return str(named)
    if (example.get("detail") or {}).get("consumer", "").startswith("group"):
        start = next((w for w in example.get("witnesses", []) if isinstance(w, dict) and w.get("event") == "ASSIGN"),
                     None)
        first = f"; its queue was first given to {start['client_id']}" if start and start.get("client_id") else ""
        return f"— (clustering: the group's to consume{first})"
    return "—"


def _where(example: dict[str, Any]) -> str:
    """Topic/broker/queue @ offset (and the message), what a reader looks up in the broker."""
    parts = []
    if example.get("topic"):
        queue = "/".join(str(example[k]) for k in ("topic", "broker", "queue_id") if example.get(k) is not None)
        parts.append(queue + (f" @ {example['offset']}" if example.get("offset") is not None else ""))
    if example.get("group"):
        parts.append(f"group {example['group']}")
    if example.get("msg_id"):
        parts.append(f"msg {example['msg_id']}")
    return " · ".join(parts) or "—"


def finding_rows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Every example finding as a row of the report's first table (violations first, then by run and time):
    what, where, which client, when (from the run's start) and which requirement; the raw rows go behind a click."""
    rows = []
    for run, data in summary["runs"].items():
        for name, cat in data["categories"].items():
            for ex in cat["examples"]:
                detail = ex.get("detail") or {}
                reason = detail.get("reason") if isinstance(detail, dict) else None
                rows.append({
                    "run": run, "category": name, "violation": cat["violation"], "level": cat["level"],
                    "what": name + (f": {reason}" if reason else "")
                    + (f" ({ex['value_ms']:.1f} ms)" if ex.get("value_ms") is not None else ""),
                    "where": _where(ex), "client": _client(ex), "ts": ex.get("ts"),
                    "when": since_start(ex.get("ts"), data.get("first_ts")), "requirement": ex.get("requirement"),
                    "raw": [json.dumps(v, sort_keys=True) for v in ([detail] if detail else []) + ex["witnesses"]],
                })
    rows.sort(key=lambda r: (not r["violation"], r["run"], r["ts"] if r["ts"] is not None else 0))
    return rows


def write_outputs(report_dir: Path, summary: dict[str, Any], metrics: dict[str, Any]) -> None:
    (report_dir / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    # The template's name ends in .j2: escaping must be asked for by that extension (a trace's text is untrusted).
    env = Environment(loader=PackageLoader("conformance.audit", "templates"),
                      autoescape=select_autoescape(("html", "j2")))
    template = env.get_template("audit.html.j2")
    html = template.render(summary=summary, plots=_plots(summary, metrics), categories=CATEGORIES, no_run=UNKNOWN_RUN,
                           findings=finding_rows(summary))
    (report_dir / "report.html").write_text(html, encoding="utf-8")
