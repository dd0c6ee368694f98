"""Results matrix: requirements as rows, implementations as columns, from the runs ``mqtck conform`` wrote.

A verdict on one implementation says little until it sits beside the others (the reference in-process,
the reference over each wire, each real peer and version), so this module lays several runs' ``summary.json``
side by side, like wpt.fyi does for browsers. It only reads finished runs: nothing here runs a test.

``matrix.json`` (written by ``mqtck matrix``) has this shape; keys are only ever added:

.. code-block:: text

    {"version": 1,
     "statuses": ["pass", "fail", "expected-fail", "unexpected-pass", "partial", "not-applicable",
                  "reference-only", "not-covered", "absent"],
     "columns": [{"label", "key", "target", "implementation", "run", "path", "verdict", "duration_s",
                  "profiles", "expectations", "counts": {status: n}, "must_fail",
                  "must_expected_fail": [{"id", "reason", "source"}]}],
     "families": [{"name", "title", "counts": {label: {status: n}}}],
     "requirements": [{"id", "level", "profile", "family", "sentence", "source",
                       "cells": {label: {"status", "summary", "expectation", "nodeid", "message"}}}]}

* ``label`` is the run's ``implementation`` (else its ``target``), made unique with `` (2)``, `` (3)``…;
  ``key`` is a slug of it for HTML anchors (``#detail-<key>-<id>``).
* ``counts`` always holds every status of ``statuses``; ``absent`` counts requirements of the current spec
  that the run did not report (it was made with an older spec). ``must_fail`` counts MUSTs with status
  ``fail``: the number that makes the column's verdict fail; ``must_expected_fail`` lists the MUSTs the
  implementation is known to break (its reviewed deviations that failed), shown first on its card.
* A cell's ``summary`` is the first failing test's one-line summary (for ``not-applicable``, the skip reason),
  ``message`` its full text, ``nodeid`` the test; ``expectation`` is ``{reason, source, repro}`` or null.
* Rows follow the spec's order (``conformance.spec``); a requirement a run reports but the current spec lacks
  comes last in its family, and an unknown family after the spec's.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from conformance import spec

#: Requirement statuses a run reports (``conformance.report``), in the order columns and legends show them.
STATUSES = ("pass", "fail", "error", "expected-fail", "unexpected-pass", "partial", "not-applicable",
            "reference-only", "not-covered")
#: Status of a cell whose run did not report the requirement at all.
ABSENT = "absent"
MATRIX_VERSION = 1
#: How a client check's run names its target (``client: COMMAND``).
CLIENT_TARGET = "client: "


class RunError(ValueError):
    """A path that is not a usable run; the message is one line naming the path and the problem."""


@dataclass(frozen=True)
class Run:
    """One run's ``summary.json``, with the directory it came from (the user named it, so reports echo it)."""

    path: Path
    doc: dict[str, Any]


def resolve_run_dir(path: Path) -> Path:
    """The run directory ``path`` names: itself if it holds ``summary.json``, else its ``latest`` run.

    Accepting a report directory lets a user pass the same ``--report-dir`` they gave ``mqtck conform``.
    """
    if not path.exists():
        raise RunError(f"{path}: no such file or directory")
    if not path.is_dir():
        raise RunError(f"{path}: not a directory (expected a run directory or a report directory)")
    if (path / "summary.json").is_file():
        return path
    latest = path / "latest"
    if (latest / "summary.json").is_file():
        return latest
    raise RunError(f"{path}: neither summary.json nor latest/summary.json found")


def load_run(path: Path) -> Run:
    """Read and sanity-check one run, so a wrong file fails here with its name, not later in the template."""
    run_dir = resolve_run_dir(path)
    file = run_dir / "summary.json"
    try:
        doc = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise RunError(f"{file}: cannot read: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise RunError(f"{file}: not valid JSON: {exc.msg} at line {exc.lineno}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("requirements"), list):
        raise RunError(f"{file}: not an mqtck summary (no 'requirements' list)")
    for entry in doc["requirements"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str) or "status" not in entry:
            raise RunError(f"{file}: a requirement entry lacks 'id' or 'status'")
    return Run(run_dir, doc)


def collect(paths: list[Path]) -> list[Run]:
    """Every run, in the order given: that order is the column order."""
    return [load_run(p) for p in paths]


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "run"


def column_labels(runs: list[Run]) -> list[tuple[str, str]]:
    """``(label, key)`` per run, both unique: cells are keyed by label and anchors by key."""
    labels: list[tuple[str, str]] = []
    seen_labels: set[str] = set()
    seen_keys: set[str] = set()
    for run in runs:
        base = str(run.doc.get("implementation") or run.doc.get("target") or run.path.name)
        label, n = base, 1
        while label in seen_labels or _slug(label) in seen_keys:
            n += 1
            label = f"{base} ({n})"
        seen_labels.add(label)
        seen_keys.add(_slug(label))
        labels.append((label, _slug(label)))
    return labels


def _profiles(doc: dict[str, Any]) -> list[str]:
    """The run's opted-in profiles, whether written as ``profiles`` (a list) or ``profile`` (a string or list)."""
    value = doc.get("profiles", doc.get("profile")) or []
    return [value] if isinstance(value, str) else [str(p) for p in value]


def cell(entry: dict[str, Any] | None) -> dict[str, Any]:
    """One cell from a run's requirement entry: the status and what a reader needs to see why."""
    if entry is None:
        return {"status": ABSENT, "summary": "", "expectation": None, "nodeid": "", "message": ""}
    status = str(entry["status"])
    tests = [t for t in entry.get("tests") or [] if isinstance(t, dict)]
    wanted = "skipped" if status == "not-applicable" else "failed"
    first = next((t for t in tests if t.get("outcome") == wanted), None)
    message = str(first.get("message") or "") if first else ""
    summary = str(first.get("summary") or "") if first else ""
    if first and not summary and message:
        summary = message.strip().splitlines()[-1]
    if status == "partial":  # which clauses were not judged, and why: the cell's reason to read
        summary = "; ".join(f"{c.get('key')}: {c.get('status')}" + (f" ({c.get('reason')})" if c.get("reason") else "")
                            for c in entry.get("clauses") or [] if isinstance(c, dict) and c.get("status") != "pass")
    expectation = entry.get("expectation")
    if isinstance(expectation, dict):
        expectation = {k: str(expectation.get(k) or "") for k in ("reason", "source", "repro")}
    else:
        expectation = None
    return {"status": status, "summary": summary, "expectation": expectation,
            "nodeid": str(first.get("nodeid") or "") if first else "", "message": message}


def _empty_counts() -> dict[str, int]:
    return dict.fromkeys((*STATUSES, ABSENT), 0)


def _rows(runs: list[Run], reqs: dict[str, spec.Requirement]) -> list[dict[str, Any]]:
    """Row skeletons in spec order, then requirements only some run knows (with that run's text)."""
    rows = {
        r.id: {"id": r.id, "level": r.level, "profile": r.profile, "family": r.family,
               "sentence": r.sentence, "source": r.source}
        for r in reqs.values()
    }
    for run in runs:
        for e in run.doc["requirements"]:
            if e["id"] not in rows:
                rows[e["id"]] = {"id": e["id"], "level": str(e.get("level", "")), "profile": str(e.get("profile", "")),
                                 "family": str(e.get("family") or e["id"].split("-")[0]),
                                 "sentence": str(e.get("sentence", "")), "source": str(e.get("source", ""))}
    return list(rows.values())


def _count_column(rows: list[dict[str, Any]], label: str,
                  fam_counts: dict[str, dict[str, dict[str, int]]]) -> tuple[dict[str, int], int, list[dict[str, str]]]:
    """One column's counts from its cells (every row has one): totals, family counts (added into
    ``fam_counts``), the MUSTs failed and the MUSTs failed as expected."""
    totals: dict[str, int] = _empty_counts()
    must_fail, must_expected = 0, []
    for row in rows:
        c = row["cells"][label]
        totals[c["status"]] = totals.get(c["status"], 0) + 1
        counts = fam_counts[row["family"]][label]
        counts[c["status"]] = counts.get(c["status"], 0) + 1
        must_fail += row["level"] == "MUST" and c["status"] == "fail"
        if row["level"] == "MUST" and c["status"] == "expected-fail":
            known = c["expectation"] or {}
            must_expected.append({"id": row["id"], "reason": known.get("reason", ""),
                                  "source": known.get("source", "")})
    return totals, must_fail, must_expected


def build(runs: list[Run], families: dict[str, spec.Family] | None = None,
          reqs: dict[str, spec.Requirement] | None = None) -> dict[str, Any]:
    """The matrix model (the ``matrix.json`` document): see the module docstring for its shape."""
    if families is None or reqs is None:
        families, reqs = spec.load()
    labels = column_labels(runs)
    by_run = [{e["id"]: e for e in run.doc["requirements"]} for run in runs]
    rows = _rows(runs, reqs)
    family_order = _family_order(families, rows)
    rows.sort(key=lambda r: family_order.index(r["family"]))  # stable: keeps spec order inside a family
    fam_counts = {f: {label: _empty_counts() for label, _ in labels} for f in family_order}
    columns = []
    for (label, key), run, entries in zip(labels, runs, by_run, strict=True):
        for row in rows:
            row.setdefault("cells", {})[label] = cell(entries.get(row["id"]))
        columns.append(_column(label, key, run, *_count_column(rows, label, fam_counts)))
    return {
        "version": MATRIX_VERSION,
        "statuses": [*STATUSES, ABSENT],
        "columns": columns,
        "families": _families(families, family_order, rows, fam_counts),
        "requirements": [{**r, "cells": r.get("cells", {})} for r in rows],
    }


class MatrixError(ValueError):
    """A published matrix that cannot be updated; the message is one line naming the file and the problem."""


def load_model(out_dir: Path) -> dict[str, Any]:
    """The ``matrix.json`` of ``out_dir``, as :func:`update` takes it."""
    path = out_dir / "matrix.json"
    try:
        model = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise MatrixError(f"{path}: no matrix to update (write one first without --update)") from exc
    except (OSError, ValueError) as exc:
        raise MatrixError(f"{path}: not a readable matrix.json ({exc})") from exc
    if not isinstance(model, dict) or model.get("version") != MATRIX_VERSION or not isinstance(
            model.get("columns"), list) or not isinstance(model.get("requirements"), list):
        raise MatrixError(f"{path}: not a matrix.json of version {MATRIX_VERSION}")
    return model


def update(model: dict[str, Any], runs: list[tuple[str | None, Run]], families: dict[str, spec.Family] | None = None,
           reqs: dict[str, spec.Requirement] | None = None) -> dict[str, Any]:
    """The published matrix with new runs folded in, so that a narrowed run (``--only``) of a new requirement
    does not mean re-running every implementation. Each run goes to the column ``label`` (else its own
    label, as :func:`column_labels` gives it): an existing column takes the cells of the requirements the run
    reports and keeps the others (a run of every requirement also becomes the column's run: its target, verdict
    and time); a new label becomes a new column, absent where the run is silent. Rows
    follow the current spec (a new requirement is absent in every column no run reported it for), and every
    count is recomputed."""
    if families is None or reqs is None:
        families, reqs = spec.load()
    columns = {str(c["label"]): c for c in model["columns"]}
    labels = list(columns)
    old_rows = {str(r["id"]): r for r in model["requirements"]}
    new = [run for _, run in runs]
    rows = [{**r, "cells": dict(old_rows.get(r["id"], {}).get("cells", {}))} for r in _rows(new, reqs)]
    for (given, run), (own, key) in zip(runs, column_labels(new), strict=True):
        label = given or own
        entries = {e["id"]: e for e in run.doc["requirements"]}
        for row in rows:
            if row["id"] in entries:
                row["cells"][label] = cell(entries[row["id"]])
        if label not in columns:
            labels.append(label)
        if label not in columns or set(entries) >= set(reqs):  # new, or a whole run: the column is this run's
            old_key = columns[label]["key"] if label in columns else (_slug(label) if given else key)
            columns[label] = _column(label, old_key, run, {}, 0, [])
    family_order = _family_order(families, rows)
    rows.sort(key=lambda r: family_order.index(r["family"]))
    fam_counts = {f: {label: _empty_counts() for label in labels} for f in family_order}
    for label in labels:
        for row in rows:
            row["cells"].setdefault(label, cell(None))
        totals, must_fail, must_expected = _count_column(rows, label, fam_counts)
        columns[label].update(counts=totals, must_fail=must_fail, must_expected_fail=must_expected)
    return {
        **model,
        "columns": [columns[label] for label in labels],
        "families": _families(families, family_order, rows, fam_counts),
        "requirements": [{**r, "cells": {label: r["cells"][label] for label in labels}} for r in rows],
    }


def _family_order(families: dict[str, spec.Family], rows: list[dict[str, Any]]) -> list[str]:
    """The spec's families, then any family only a run's rows name."""
    return list(families) + [f for f in dict.fromkeys(r["family"] for r in rows) if f not in families]


def _families(families: dict[str, spec.Family], order: list[str], rows: list[dict[str, Any]],
              counts: dict[str, dict[str, dict[str, int]]]) -> list[dict[str, Any]]:
    return [{"name": f, "title": families[f].title if f in families else f, "counts": counts[f]}
            for f in order if any(r["family"] == f for r in rows)]


def _column(label: str, key: str, run: Run, counts: dict[str, int], must_fail: int,
            must_expected_fail: list[dict[str, str]]) -> dict[str, Any]:
    doc = run.doc
    target = str(doc.get("target", ""))
    if target.startswith(CLIENT_TARGET) and doc.get("implementation"):
        # A client check's target is its command line, which names one machine's paths (a JVM's classpath, a
        # temporary home): the published matrix names the client instead.
        target = f"{CLIENT_TARGET}{doc['implementation']}"
    return {
        "label": label, "key": key, "target": target,
        "implementation": doc.get("implementation"), "run": str(doc.get("run") or run.path.resolve().name),
        # The run folder's name only: a published matrix must not carry one machine's paths.
        "path": run.path.resolve().name, "verdict": str(doc.get("verdict", "")), "duration_s": doc.get("duration_s"),
        "profiles": _profiles(doc), "expectations": doc.get("expectations"), "counts": counts, "must_fail": must_fail,
        "must_expected_fail": must_expected_fail,
    }


def html(model: dict[str, Any]) -> str:
    """The one self-contained page (``templates/matrix.html.j2``), rendered from the model alone."""
    env = Environment(loader=PackageLoader("conformance.report"), autoescape=select_autoescape(("html", "j2")))
    return env.get_template("matrix.html.j2").render(m=model)


def write(out_dir: Path, model: dict[str, Any]) -> Path:
    """Write ``index.html`` and ``matrix.json`` into ``out_dir``; returns the page's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "matrix.json").write_text(json.dumps(model, indent=2) + "\n", encoding="utf-8")
    page = out_dir / "index.html"
    page.write_text(html(model), encoding="utf-8")
    return page
