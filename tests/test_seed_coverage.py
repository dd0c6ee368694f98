"""The seed coverage pages (docs/seed-coverage/*.md) name only requirements the spec has, and each of their table rows
cites the seed's lines: a renamed or dropped ID, or a row without lines, would mislead a reader looking for what
covers a behaviour of the seed."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted((ROOT / "docs" / "seed-coverage").glob("*.md"))
#: A requirement ID (FAMILY-N), with no clause.
REQUIREMENT_ID = re.compile(r"\b([A-Z]{2,}-\d+)\b")
#: A behaviour row: | n | behaviour | lines | requirement |.
ROW = re.compile(r"^\| (\d+) \| (.+?) \| ([\d, -]+) \| (.+) \|$")


def spec_ids() -> set[str]:
    spec = tomllib.loads((ROOT / "conformance" / "spec" / "requirements.toml").read_text(encoding="utf-8"))
    return {r["id"] for r in spec["requirement"]}


#: A page's summary: "Seed NNN coverage: K behaviours with an ID, out of N."
SUMMARY = re.compile(r"^Seed (\d{3}) coverage: (\d+) behaviours with an ID, out of (\d+)\.$", re.MULTILINE)


def test_seed_004_has_a_coverage_page() -> None:
    assert "004.md" in [p.name for p in PAGES]


def test_seed_003_has_a_coverage_page_with_its_count() -> None:
    """Issue 39: seed 003 in full, with the count of its behaviours that have an ID."""
    page = ROOT / "docs" / "seed-coverage" / "003.md"
    text = page.read_text(encoding="utf-8")
    summary = SUMMARY.search(text)
    assert summary and summary.group(1) == "003", "003.md has no 'Seed 003 coverage: K ... out of N.' line"
    rows = [ROW.match(line) for line in text.splitlines() if re.match(r"^\| \d+ \|", line)]
    with_id = [m for m in rows if m and "**none" not in m.group(4)]
    assert (int(summary.group(2)), int(summary.group(3))) == (len(with_id), len(rows)), summary.group(0)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_id_a_coverage_page_names_is_in_the_spec(page: Path) -> None:
    named = set(REQUIREMENT_ID.findall(page.read_text(encoding="utf-8")))
    assert named, f"{page.name} names no requirement"
    unknown = sorted(named - spec_ids())
    assert not unknown, f"{page.name} names IDs the spec does not have: {unknown}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_behaviour_row_cites_lines_and_a_requirement_or_says_why_none(page: Path) -> None:
    rows = [ROW.match(line) for line in page.read_text(encoding="utf-8").splitlines() if re.match(r"^\| \d+ \|", line)]
    assert rows and all(rows), f"{page.name}: a behaviour row is not | n | behaviour | lines | requirement |"
    numbers = [int(m.group(1)) for m in rows if m]
    assert numbers == list(range(1, len(numbers) + 1)), f"{page.name}: rows are not numbered 1..n in order"
    for m in rows:
        assert m is not None
        cover = m.group(4)
        assert REQUIREMENT_ID.search(cover) or "**none" in cover, f"{page.name} row {m.group(1)}: {cover!r}"
        if "**none" in cover:
            assert ":" in cover, f"{page.name} row {m.group(1)}: 'none' without its reason"
