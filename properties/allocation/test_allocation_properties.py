"""The allocation properties against every built-in strategy (and a few configurations of them).

The checks are the functions behind ``mqtck strategy check`` (``conformance.strategy.properties``),
run here under pytest's Hypothesis profile; a failure prints the shrunk group as a table.
"""

from __future__ import annotations

import pytest
from hypothesis import given

from conformance.strategy.adapters import PythonStrategyUnderTest
from conformance.strategy.context import CheckContext
from conformance.strategy.declaration import (
    BUILTIN_DECLARATIONS,
    POP_SHARE,
    ROOM_NEARBY,
    Declaration,
)
from conformance.strategy.properties import Property, applicable
from conformance.strategy.render import failure_text
from conformance.strategy.scenario import scenarios
from reference.allocation import BUILTIN_NAMES
from reference.allocation.registry import BuiltinStrategy

#: Built-ins with their own promises, plus configurations the defaults do not reach.
CONFIGURATIONS: dict[str, tuple[str, Declaration]] = {
    **{name: (name, BUILTIN_DECLARATIONS[name]) for name in BUILTIN_NAMES},
    "consistent_hash v1": ("consistent_hash", Declaration(stickiness_bound=0, params={"virtualNodeCnt": 1})),
    "consistent_hash v50": ("consistent_hash", Declaration(stickiness_bound=0, params={"virtualNodeCnt": 50})),
    "nearby by circle": ("machine_room_nearby", Declaration(
        machine_room=ROOM_NEARBY, params={"innerStrategy": "AllocateMessageQueueAveragelyByCircle"})),
    "pop over circle": ("pop_share", Declaration(model=POP_SHARE,
                                                 pop_inner="AllocateMessageQueueAveragelyByCircle")),
}



def _configs(prop_name: str) -> list:
    """The configurations a property applies to, as pytest parameters."""
    return [
        pytest.param(config, prop, id=config)
        for config, (_, declaration) in CONFIGURATIONS.items()
        for prop in applicable(declaration)
        if prop.name == prop_name
    ]


def _holds(config: str, prop: Property) -> None:
    name, declaration = CONFIGURATIONS[config]
    ctx = CheckContext(PythonStrategyUnderTest(BuiltinStrategy(name), spec=name), declaration)

    @given(scenarios(declaration))
    def holds(scenario):  # type: ignore[no-untyped-def]
        failure = prop.check(ctx, scenario)
        assert failure is None, "\n" + failure_text(prop.name, failure)

    try:
        holds()
    finally:
        ctx.close()


@pytest.mark.req("ALLOC-1", "ALLOC-8")
@pytest.mark.parametrize("config, prop", _configs("validity"))
def test_validity(config: str, prop: Property) -> None:
    _holds(config, prop)


@pytest.mark.req("ALLOC-10")
@pytest.mark.parametrize("config, prop", _configs("partition"))
def test_partition(config: str, prop: Property) -> None:
    _holds(config, prop)


@pytest.mark.req("ALLOC-11")
@pytest.mark.parametrize("config, prop", _configs("balance"))
def test_balance(config: str, prop: Property) -> None:
    _holds(config, prop)


@pytest.mark.req("ALLOC-13")
@pytest.mark.parametrize("config, prop", _configs("stickiness"))
def test_stickiness(config: str, prop: Property) -> None:
    _holds(config, prop)


@pytest.mark.req("ALLOC-12")
@pytest.mark.parametrize("config, prop", _configs("determinism"))
def test_determinism(config: str, prop: Property) -> None:
    _holds(config, prop)


@pytest.mark.req("ALLOC-14")
@pytest.mark.parametrize("config, prop", _configs("machine-room"))
def test_machine_room(config: str, prop: Property) -> None:
    _holds(config, prop)


@pytest.mark.req("ALLOC-15", "ALLOC-16", "ALLOC-22")
@pytest.mark.parametrize("config, prop", _configs("pop-share"))
def test_pop_share(config: str, prop: Property) -> None:
    _holds(config, prop)


@pytest.mark.req("ALLOC-7")
@pytest.mark.parametrize("config, prop", _configs("configured"))
def test_configured(config: str, prop: Property) -> None:
    _holds(config, prop)
