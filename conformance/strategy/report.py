"""Results of a check: per property pass/fail, and the shrunk counterexample of a failure."""

from __future__ import annotations

from dataclasses import dataclass, field

from conformance.strategy.model import Outcome
from conformance.strategy.scenario import Scenario

PASS = "pass"
FAIL = "fail"
#: Measured, but nothing was declared about it, so it cannot fail.
REPORTED = "reported"


@dataclass(frozen=True)
class Row:
    """One consumer in a counterexample: what the property expected of it and what it got."""

    consumer: str
    expected: Outcome | str | None
    actual: Outcome | str | None
    note: str = ""


@dataclass(frozen=True)
class Failure:
    """Why a property does not hold for one scenario (after shrinking: the smallest found)."""

    summary: str
    scenario: Scenario
    rows: tuple[Row, ...] = ()
    problems: tuple[str, ...] = ()
    columns: tuple[str, str] = ("expected", "actual")


@dataclass
class PropertyResult:
    name: str
    summary: str
    required: bool
    status: str = PASS
    examples: int = 0
    seconds: float = 0.0
    failure: Failure | None = None
    observation: str | None = None
    note: str | None = None


@dataclass
class CheckReport:
    strategy: str
    declaration: str
    seed: int
    max_examples: int
    results: list[PropertyResult] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return all(r.status != FAIL for r in self.results)

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1
