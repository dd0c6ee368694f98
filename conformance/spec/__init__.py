"""The spec as data: normative statements with stable IDs, loaded from ``requirements.toml``.

One file holds every family (STORE, OFFSET, QOFF, PULL, LPOLL, CGRP, ALLOC, …). Each entry has an
``id`` (``FAMILY-N``), a ``level`` (MUST/SHOULD/MAY), the ``sentence``, its ``source`` (seed file and
section) and the target ``capability`` a test of it needs. ``SPEC.md`` beside this file is rendered
from it (``mqtck spec render``) and a test keeps the two equal.

A requirement whose sentence states several things that a target may let a test judge separately lists them as
``clauses`` (key -> text). Its tests then mark the clause they judge, ``req("CGRP-6.closed")``, and the report
passes the requirement only when every clause was judged and passed: a clause no test could reach on the target
leaves the requirement ``partial``, never ``pass`` (docs/verdicts.md). A requirement with ``scope =
"reference"`` states what the reference itself records (its trace), so other targets report it
``reference-only``.

A MUST must cite a seed (``seed 00N``): it is what a seed's text says the real system does. Anything else
(an upstream class, the reference's design) is at most a SHOULD.
"""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

SPEC_DIR = Path(__file__).resolve().parent
REQUIREMENTS_FILE = SPEC_DIR / "requirements.toml"
SPEC_MD = SPEC_DIR / "SPEC.md"
LEVELS = ("MUST", "SHOULD", "MAY")
#: Named profiles: ``strict`` holds the reference's deliberate improvements over the real broker.
PROFILES = ("strict",)
#: Scopes: ``reference`` marks a requirement on the reference's own records, which no other target can show.
SCOPES = ("", "reference")
_ID = re.compile(r"^[A-Z][A-Z0-9]*-[0-9]+$")
_CLAUSE_KEY = re.compile(r"^[a-z][a-z0-9-]*$")
#: How a MUST's source names a seed article.
SEED_CITATION = re.compile(r"\bseed 00[0-4]\b")


def split_marker(marker: str) -> tuple[str, str]:
    """``"CGRP-6.closed"`` -> ``("CGRP-6", "closed")``; a bare ID has the clause ``""``."""
    rid, _, clause = marker.partition(".")
    return rid, clause


@dataclass(frozen=True)
class Requirement:
    id: str
    level: str
    sentence: str
    source: str
    capability: str
    family: str
    note: str = ""
    #: A named profile (``strict``) in which this SHOULD gates like a MUST: a rule where the reference is
    #: deliberately stricter than the real system. A target opts in with ``mqtck conform --profile NAME``.
    profile: str = ""
    #: The clauses a test may judge apart (key -> text), in file order; empty: the sentence is one clause.
    clauses: tuple[tuple[str, str], ...] = ()
    #: ``reference``: about the reference's own records (reported ``reference-only`` on other targets).
    scope: str = ""


@dataclass(frozen=True)
class Family:
    name: str
    title: str
    summary: str


def load(path: Path = REQUIREMENTS_FILE) -> tuple[dict[str, Family], dict[str, Requirement]]:
    """Load and validate the spec; raises ValueError naming the entry and the rule it breaks."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    families = {
        f["name"]: Family(f["name"], f["title"], f.get("summary", "")) for f in data.get("family", [])
    }
    reqs: dict[str, Requirement] = {}
    for entry in data.get("requirement", []):
        rid = entry.get("id", "")
        if not _ID.match(rid):
            raise ValueError(f"requirement id {rid!r}: must look like FAMILY-N")
        if rid in reqs:
            raise ValueError(f"requirement id {rid!r}: defined twice")
        family = rid.split("-")[0]
        if family not in families:
            raise ValueError(f"requirement {rid}: family {family!r} has no [[family]] entry")
        level = entry.get("level")
        if level not in LEVELS:
            raise ValueError(f"requirement {rid}: level must be one of {LEVELS}, got {level!r}")
        profile = entry.get("profile", "")
        if profile and (profile not in PROFILES or level != "SHOULD"):
            raise ValueError(f"requirement {rid}: profile must be one of {PROFILES} on a SHOULD, got {profile!r}")
        for key in ("sentence", "source", "capability"):
            if not entry.get(key):
                raise ValueError(f"requirement {rid}: {key} is required")
        scope = entry.get("scope", "")
        if scope not in SCOPES:
            raise ValueError(f"requirement {rid}: scope must be one of {SCOPES}, got {scope!r}")
        clauses = entry.get("clauses", {})
        if not isinstance(clauses, dict) or len(clauses) == 1:
            raise ValueError(f"requirement {rid}: clauses must be a table of two or more key = text")
        for key, text in clauses.items():
            if not _CLAUSE_KEY.match(key) or not isinstance(text, str) or not text.strip():
                raise ValueError(f"requirement {rid}: clause {key!r} needs a key of [a-z0-9-] and a text")
        reqs[rid] = Requirement(
            rid, level, " ".join(entry["sentence"].split()), entry["source"], entry["capability"],
            family, " ".join(entry.get("note", "").split()), profile,
            tuple((k, " ".join(v.split())) for k, v in clauses.items()), scope,
        )
    return families, reqs


def requirements() -> dict[str, Requirement]:
    return load()[1]


def render_markdown(families: dict[str, Family], reqs: dict[str, Requirement]) -> str:
    """SPEC.md: one table per family, in file order."""
    out = [
        "# mqtck specification",
        "",
        "Rendered from `requirements.toml` by `mqtck spec render`; edit that file, not this one.",
        "Levels follow RFC 2119. Sources name the seed article (`../shared/seeds/`) and its section.",
        "",
    ]
    for fam in families.values():
        rows = [r for r in reqs.values() if r.family == fam.name]
        if not rows:
            continue
        out += [f"## {fam.name}: {fam.title}", ""]
        if fam.summary:
            out += [" ".join(fam.summary.split()), ""]
        out += ["| ID | level | requirement | source | needs |", "| --- | --- | --- | --- | --- |"]
        for r in rows:
            sentence = r.sentence + "".join(f" **[{k}]** {t}" for k, t in r.clauses)
            sentence += f" *Note: {r.note}*" if r.note else ""
            sentence += " *(reference-only: about the reference's own records)*" if r.scope else ""
            level = f"{r.level} (MUST in profile {r.profile})" if r.profile else r.level
            out.append(f"| {r.id} | {level} | {sentence} | {r.source} | {r.capability} |")
        out.append("")
    return "\n".join(out)


def _marker_ids(node: ast.AST) -> Iterable[str]:
    """IDs from ``pytest.mark.req("A-1", …)`` / ``mark.req(...)`` / ``req(...)`` calls under node."""
    for sub in ast.walk(node):
        if not isinstance(sub, ast.Call):
            continue
        func = sub.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name != "req":
            continue
        for arg in sub.args:
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                yield arg.value


def scan_test_markers(roots: Iterable[Path]) -> dict[str, set[str]]:
    """Map requirement ID -> test files (``path::function``) whose ``req`` markers name it."""
    found: dict[str, set[str]] = {}
    for root in roots:
        for path in sorted(Path(root).rglob("test_*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            module_ids: set[str] = set()
            for stmt in tree.body:  # module-level ``pytestmark = pytest.mark.req(...)``
                if isinstance(stmt, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == "pytestmark" for t in stmt.targets
                ):
                    module_ids.update(_marker_ids(stmt.value))
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    ids: set[str] = set()
                    for deco in node.decorator_list:
                        ids.update(_marker_ids(deco))
                    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
                        "test"
                    ):
                        ids |= module_ids
                    for rid in ids:
                        found.setdefault(rid, set()).add(f"{path.as_posix()}::{node.name}")
    return found
