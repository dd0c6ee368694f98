"""At-least-once in broadcasting (ALO-2, REBAL-3): every live consumer gets every message.

Broadcasting consumers each own every queue (REBAL-3) and keep their progress in a local file, so a
consumer that crashes and restarts with its client id (``Join(revive=True)``) resumes from its last
persisted offsets (REBAL-6) and consumes what it missed. After the schedule settles, every consumer
alive at the end has consumed OK every message at or above its start offset (or discarded it after a
listener failure, as RocketMQ's broadcasting does, or it expired), its commits never passed a
message it had not consumed (CONSUME-2), and each of its duplicates has a cause (ALO-3).
"""

from __future__ import annotations

import pytest
from hypothesis import given

from properties.sim_strategies import all_steps, run_and_check, scenarios
from reference.client.components import ClientComponents
from reference.client.config import MessageModel
from reference.sim.scenario import Scenario

REQUIREMENTS = ("ALO-2", "ALO-4", "ALO-3", "CONSUME-2", "REBAL-3", "REBAL-6", "REBAL-8")


def broadcast_property(components: ClientComponents | None = None):  # type: ignore[no-untyped-def]
    @given(scenario=scenarios(all_steps, model=MessageModel.BROADCASTING, max_steps=10))
    def prop(scenario: Scenario) -> None:
        run_and_check(scenario, components, requirements=REQUIREMENTS)

    return prop


@pytest.mark.req(*REQUIREMENTS)
def test_broadcasting_at_least_once_property() -> None:
    broadcast_property()()
