"""Every kept fuzz input (``fixtures/fuzz/<target>/``, crashes included) and every seed goes through its target
again and is refused the documented way, never a crash (``tests/fuzz/targets.py`` states each contract)."""

from __future__ import annotations

import pytest

from tests.fuzz.run import FIXTURES
from tests.fuzz.targets import TARGETS, seeds


def _inputs() -> list[tuple[str, str, bytes]]:
    out = [(name, f"seed-{i}", data) for name, kept in seeds().items() for i, data in enumerate(kept)]
    for name in TARGETS:
        for path in sorted((FIXTURES / name).rglob("*")):
            if path.is_file():
                out.append((name, str(path.relative_to(FIXTURES)), path.read_bytes()))
    return out


@pytest.mark.parametrize(("target", "label", "data"), _inputs(), ids=lambda v: v if isinstance(v, str) else "")
def test_a_kept_input_is_refused_the_documented_way(target: str, label: str, data: bytes) -> None:
    TARGETS[target](data)


def test_every_target_has_kept_inputs() -> None:
    """The corpora a fuzz run grows are kept in the repository, so a fresh run starts where the last ended."""
    for name in TARGETS:
        assert any((FIXTURES / name / "corpus").glob("*")), f"fixtures/fuzz/{name}/corpus is empty"
