"""The docs stand alone: a clone of this repository is all a reader has, so nothing in docs/ or the README points
outside it (the development notes in ../shared are not part of any clone) and every relative link resolves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([*ROOT.glob("docs/*.md"), ROOT / "README.md"])
#: A path into the development notes next to the checkout (``../shared/trace-schema.md``, ``shared/protocols/…``).
OUTSIDE = re.compile(r"(\.\./)+shared\b|(?<![\w/.-])shared/(trace-schema|protocols|seeds|golden|DESIGN)")
#: ``[text](target)`` links, the target without its ``#anchor``.
LINK = re.compile(r"\[[^\]]*\]\((?!https?:|mailto:|#)([^)#\s]+)(#[^)]*)?\)")


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_no_page_points_outside_the_repository(page: Path) -> None:
    for number, line in enumerate(page.read_text("utf-8").splitlines(), 1):
        assert not OUTSIDE.search(line), f"{page.name}:{number} points outside the repository: {line.strip()[:120]}"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_relative_link_resolves(page: Path) -> None:
    missing = [target for target, _ in LINK.findall(page.read_text("utf-8")) if not (page.parent / target).exists()]
    assert not missing, f"{page.name} links to files that do not exist: {missing}"


def test_the_trace_contract_names_every_column_of_the_machine_readable_schema() -> None:
    import json

    schema = json.loads((ROOT / "fixtures" / "trace-schema-v1.json").read_text("utf-8"))
    page = (ROOT / "docs" / "trace-schema.md").read_text("utf-8")
    assert {column for column in schema["properties"] if f"| `{column}` |" not in page} == set()


def test_the_trace_contract_gives_each_event_the_columns_the_schema_requires() -> None:
    import json

    schema = json.loads((ROOT / "fixtures" / "trace-schema-v1.json").read_text("utf-8"))
    required = {rule["if"]["properties"]["event"]["const"]: set(rule["then"].get("required", ()))
                for rule in schema["allOf"]}
    page = (ROOT / "docs" / "trace-schema.md").read_text("utf-8").split("## Event kinds", 1)[1]
    documented: dict[str, set[str]] = {}
    for row in page.splitlines():
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("`"):
            columns = {word for word in re.findall(r"[a-z_]+", cells[3]) if word in schema["properties"]}
            for event in re.findall(r"`([A-Z_]+)`", cells[0]):
                documented[event] = columns
    assert set(documented) == set(schema["properties"]["event"]["enum"])
    base = set(schema["required"])
    for event, columns in documented.items():
        assert columns == required.get(event, set()) - base, event


def test_the_example_workflow_installs_mqtck_from_a_checkout_not_a_placeholder_host() -> None:
    import yaml

    workflow = yaml.safe_load((ROOT / "docs" / "examples" / "gate-with-mqtck.yml").read_text("utf-8"))
    for name, job in workflow["jobs"].items():
        checked_out = {step["with"]["path"] for step in job["steps"]
                       if step.get("uses", "").startswith("actions/checkout@") and "path" in step.get("with", {})}
        installs = [step["run"] for step in job["steps"] if "pip install" in step.get("run", "")]
        assert installs, name
        for run in installs:
            target = run.split("pip install", 1)[1].split()[0]
            assert target.removeprefix("./") in checked_out, f"{name}: {run!r} installs from no checkout"
    assert ".invalid" not in (ROOT / "docs" / "examples" / "gate-with-mqtck.yml").read_text("utf-8")
