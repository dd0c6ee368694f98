"""The spec file is well-formed, SPEC.md is its current rendering, and every ID is tested."""

from __future__ import annotations

from pathlib import Path

from conformance import spec
from conformance.commands.spec import coverage_problems


def test_spec_md_is_rendered_from_requirements() -> None:
    families, reqs = spec.load()
    assert spec.SPEC_MD.read_text(encoding="utf-8") == spec.render_markdown(families, reqs), (
        "SPEC.md is stale: run `mqtck spec render`"
    )


def test_every_requirement_has_a_test_and_every_marker_a_requirement() -> None:
    assert coverage_problems(Path(__file__).resolve().parents[1]) == []


def test_every_requirement_names_a_known_capability() -> None:
    from conformance.targets import CAPABILITIES

    _, reqs = spec.load()
    unknown = {r.id: r.capability for r in reqs.values() if r.capability not in CAPABILITIES}
    assert unknown == {}
