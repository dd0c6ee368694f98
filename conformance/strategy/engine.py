"""Drive Hypothesis, one search per property, and collect the results.

Searching each property separately costs a little (the context's cache absorbs most of it) but
gives what a user needs: a verdict per property and, for each failing one, the smallest group that
still shows that particular failure. Hypothesis runs in-process with a fixed seed, no example
database, and no deadline (a program behind the exec protocol may be slow to start).

Two exits from a search are not failures of the property: a :class:`ProtocolError` (the program
crashed, hung or spoke garbage: the whole check stops with exit 2) and an exhausted shrink budget
(shrinking stops and the smallest failure found so far is reported).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hypothesis import HealthCheck, Verbosity, given, seed, settings
from hypothesis.errors import Flaky

from conformance.strategy.adapters import StrategyUnderTest
from conformance.strategy.context import CheckContext
from conformance.strategy.declaration import Declaration
from conformance.strategy.properties import ALL_TO_ONE, PROPERTIES, Property, applicable
from conformance.strategy.protocol import ProtocolError
from conformance.strategy.report import FAIL, PASS, REPORTED, CheckReport, Failure, PropertyResult
from conformance.strategy.scenario import scenarios

#: Examples per property in the default profile (``--examples``).
DEFAULT_EXAMPLES = 200
#: The default seed (``--seed``): a check is reproducible unless asked otherwise.
DEFAULT_SEED = 0
#: Test cases Hypothesis may run while shrinking one failure before the smallest so far is reported.
SHRINK_BUDGET = 400
#: Seconds the same shrinking may take (large groups make each test case slower).
SHRINK_SECONDS = 4.0


@dataclass(frozen=True)
class CheckSettings:
    examples: int = DEFAULT_EXAMPLES
    seed: int = DEFAULT_SEED
    properties: tuple[str, ...] = ()  # empty: every applicable property
    shrink_budget: int = SHRINK_BUDGET
    shrink_seconds: float = SHRINK_SECONDS


class _Failed(Exception):
    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.summary)
        self.failure = failure


class _Stop(BaseException):
    """Leaves Hypothesis at once (it only catches ``Exception``): no shrinking of a broken pipe."""

    def __init__(self, error: ProtocolError | None = None) -> None:
        super().__init__(str(error) if error else "shrink budget exhausted")
        self.error = error


def run_property(prop: Property, ctx: CheckContext, cfg: CheckSettings) -> PropertyResult:
    result = PropertyResult(prop.name, prop.summary, prop.required(ctx.declaration))
    calls = 0
    first_failure_at: int | None = None
    shrink_started = 0.0
    smallest: Failure | None = None

    @seed(cfg.seed)
    @settings(
        max_examples=cfg.examples,
        database=None,
        deadline=None,
        derandomize=False,
        verbosity=Verbosity.quiet,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )
    @given(scenarios(ctx.declaration))
    def search(scenario):  # type: ignore[no-untyped-def]
        nonlocal calls, first_failure_at, shrink_started, smallest
        calls += 1
        if first_failure_at is not None and (
            calls - first_failure_at > cfg.shrink_budget
            or time.perf_counter() - shrink_started > cfg.shrink_seconds
        ):
            raise _Stop()
        try:
            failure = prop.check(ctx, scenario)
        except ProtocolError as exc:
            raise _Stop(exc) from None
        if failure is not None and result.required:
            smallest = failure
            if first_failure_at is None:
                first_failure_at, shrink_started = calls, time.perf_counter()
            raise _Failed(failure)

    started = time.perf_counter()
    try:
        search()
    except _Failed as exc:
        result.status, result.failure = FAIL, exc.failure
    except _Stop as stop:
        if stop.error is not None:
            raise stop.error from None
        result.status, result.failure = FAIL, smallest
        result.note = "shrinking stopped at its budget; the counterexample may not be minimal"
    except Flaky:
        result.status, result.failure = FAIL, smallest
        result.note = "the failure did not repeat when the example was run again: non-deterministic strategy"
    result.examples = calls
    result.seconds = time.perf_counter() - started
    if not result.required and result.status == PASS:
        result.status = REPORTED
    observed = ctx.observations.get(prop.name)
    if observed is not None and observed.worst is not None:
        result.observation = _observation_text(prop.name, observed.worst)
    all_to_one = ctx.observations.get(ALL_TO_ONE) if prop.name == "balance" else None
    if all_to_one is not None and all_to_one.worst is not None and ctx.declaration.balance_bound is None:
        # Balance is only measured without a bound, so say plainly when it is as bad as it can be.
        result.observation = (f"{result.observation}; maximally unbalanced: one consumer got every queue of a "
                              f"group (up to {all_to_one.worst}) and the others none; to fail on this, check with "
                              "--balance-bound N (1 for an even split)")
    return result


def _observation_text(name: str, worst: int) -> str:
    if name == "balance":
        return f"largest spread seen: {worst}"
    return f"most collateral moves seen: {worst}"


def run_check(
    strategy: StrategyUnderTest, declaration: Declaration, cfg: CheckSettings = CheckSettings(),
    on_property: Callable[[str], None] | None = None,
) -> CheckReport:
    """Every applicable (or every selected) property against ``strategy``; ``on_property`` hears the name of each
    before it runs (progress). Raises :class:`ProtocolError` when a program breaks the exec protocol."""
    chosen = select(declaration, cfg.properties)
    report = CheckReport(strategy.label, declaration.describe(), cfg.seed, cfg.examples)
    ctx = CheckContext(strategy, declaration)
    started = time.perf_counter()
    try:
        for prop in chosen:
            if on_property is not None:
                on_property(prop.name)
            report.results.append(run_property(prop, ctx, cfg))
    finally:
        ctx.close()
    report.seconds = time.perf_counter() - started
    if any(r.name == "determinism" for r in report.results) and not ctx.has_twin:
        for r in report.results:
            if r.name == "determinism":
                r.note = "checked within this process only (no importable name for a second process)"
    return report


def select(declaration: Declaration, names: Sequence[str]) -> list[Property]:
    """Applicable properties, restricted to ``names`` when given; ``ValueError`` for a bad name."""
    known = {p.name for p in PROPERTIES}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown property {unknown[0]!r}; properties: {', '.join(sorted(known))}")
    props = applicable(declaration)
    if names:
        not_here = [n for n in names if n not in {p.name for p in props}]
        if not_here:
            raise ValueError(f"property {not_here[0]!r} does not apply to a {declaration.model} strategy")
        props = [p for p in props if p.name in names]
    return props
