"""What the properties share during one check: the strategy, its promises, and evaluated groups.

Every property search starts from the same seed, so the searches draw largely the same scenarios;
the cache lets them share one evaluation of each group instead of asking the strategy again (which
matters for a program behind the exec protocol). Determinism is the one property that must ask
afresh, and does (``fresh=True``).
"""

from __future__ import annotations

from collections import OrderedDict

from conformance.strategy.adapters import StrategyUnderTest
from conformance.strategy.declaration import Declaration
from conformance.strategy.model import Observations, Outcome
from conformance.strategy.scenario import Scenario

#: Group evaluations kept (each is one outcome per asked consumer).
CACHE_SIZE = 2048

Evaluation = dict[str, Outcome]


class CheckContext:
    def __init__(self, strategy: StrategyUnderTest, declaration: Declaration) -> None:
        self.strategy = strategy
        self.declaration = declaration
        self.observations: dict[str, Observations] = {}
        self._cache: OrderedDict[Scenario, Evaluation] = OrderedDict()
        self._twin: StrategyUnderTest | None = None
        self._twin_made = False

    def evaluate(self, scenario: Scenario, fresh: bool = False) -> Evaluation:
        """Ask every member and outsider of ``scenario`` for its share, in one batch."""
        if not fresh and scenario in self._cache:
            self._cache.move_to_end(scenario)
            return self._cache[scenario]
        outcomes = self.strategy.allocate_many([scenario.request(cid) for cid in scenario.asked])
        evaluation = dict(zip(scenario.asked, outcomes, strict=True))
        if not fresh:
            self._cache[scenario] = evaluation
            if len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return evaluation

    def earlier(self, scenario: Scenario) -> Evaluation | None:
        """The evaluation an earlier property made of ``scenario``, if any (seconds ago, typically)."""
        return self._cache.get(scenario)

    def evaluate_in_twin(self, scenario: Scenario) -> Evaluation | None:
        """The same questions to an independent second process, or ``None`` if there is none."""
        if not self._twin_made:
            self._twin, self._twin_made = self.strategy.twin(), True
        if self._twin is None:
            return None
        outcomes = self._twin.allocate_many([scenario.request(cid) for cid in scenario.asked])
        return dict(zip(scenario.asked, outcomes, strict=True))

    @property
    def has_twin(self) -> bool:
        return self._twin is not None

    def observe(self, prop: str, value: int) -> None:
        self.observations.setdefault(prop, Observations()).record(value)

    def close(self) -> None:
        if self._twin is not None:
            self._twin.close()
        self._cache.clear()
