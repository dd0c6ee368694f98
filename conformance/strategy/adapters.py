"""Strategies under test: one interface over a Python object and over a program (:mod:`.execproc`).

The properties only ever call :meth:`StrategyUnderTest.allocate_many`, a batch of requests (one
group's worth) answered in order, so a program can be fed the batch without a round trip per
request, and :meth:`twin`, a second, independent instance used to check determinism across
processes.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import Any, Protocol

from conformance.strategy.execproc import ExecStrategyUnderTest
from conformance.strategy.model import Outcome, Request
from reference.allocation import AllocationError, MessageQueue

#: The hash seed given to a Python strategy's twin process when this process's seed is unknown.
#: Any fixed value differs from a random one; str hashes, and so set orders, then differ too.
TWIN_HASH_SEED = "4242"


class StrategyUnderTest(Protocol):
    label: str

    def allocate_many(self, requests: Sequence[Request]) -> list[Outcome]: ...

    def twin(self) -> StrategyUnderTest | None: ...

    def close(self) -> None: ...


class PythonStrategyUnderTest:
    """A Python strategy: an instance with ``allocate``, or a class (instantiated without arguments).

    If the object (or class) has ``from_params(params)``, that builds the strategy for each distinct
    ``params`` (how machine rooms, popShareQueueNum and configured lists reach it); otherwise params
    are ignored. ``spec`` (``"averagely"`` or ``"package.module:Name"``) lets a twin process load the
    same strategy; without it there is no cross-process check.
    """

    def __init__(self, target: Any, spec: str | None = None, label: str | None = None) -> None:
        self.target = target
        self.spec = spec
        self.label = label or spec or getattr(target, "__name__", type(target).__name__)
        self._by_params: dict[str, Any] = {}

    def _strategy(self, params_json: str) -> Any:
        strategy = self._by_params.get(params_json)
        if strategy is None:
            if hasattr(self.target, "from_params"):
                strategy = self.target.from_params(json.loads(params_json))
            elif isinstance(self.target, type):
                strategy = self.target()
            else:
                strategy = self.target
            self._by_params[params_json] = strategy
        return strategy

    def allocate_many(self, requests: Sequence[Request]) -> list[Outcome]:
        return [self.allocate(r) for r in requests]

    def allocate(self, request: Request) -> Outcome:
        mq_all, cid_all = list(request.mq_all), list(request.cid_all)
        try:
            result = self._strategy(request.params_json).allocate(
                request.consumer_group, request.current_cid, mq_all, cid_all
            )
        except AllocationError as exc:
            return Outcome(error=str(exc))
        except Exception as exc:  # a refusal by any other name; validity decides if it was allowed
            return Outcome(error=f"{type(exc).__name__}: {exc}")
        if tuple(mq_all) != request.mq_all or tuple(cid_all) != request.cid_all:
            return Outcome(defect="allocate changed its mqAll or cidAll argument")
        if result is None:
            return Outcome()
        if not isinstance(result, list | tuple) or not all(isinstance(mq, MessageQueue) for mq in result):
            return Outcome(defect=f"allocate returned {type(result).__name__}, not a list of MessageQueue")
        return Outcome(queues=tuple(result))

    def twin(self) -> StrategyUnderTest | None:
        """The same strategy served by ``python -m conformance.strategy.serve`` with another hash seed."""
        if self.spec is None:
            return None
        env = dict(os.environ)
        mine = env.get("PYTHONHASHSEED")
        env["PYTHONHASHSEED"] = str(int(mine) + 1) if mine and mine.isdigit() else TWIN_HASH_SEED
        env["PYTHONPATH"] = os.pathsep.join(p or os.getcwd() for p in sys.path)
        command = [sys.executable, "-m", "conformance.strategy.serve", self.spec]
        return ExecStrategyUnderTest(command, env=env, label=f"{self.label} (twin process)")

    def close(self) -> None:
        self._by_params.clear()
