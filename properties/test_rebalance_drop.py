"""Rebalance drop semantics (REBAL) on simulated consumer groups under membership faults.

Schedules of producer bursts, joins, graceful leaves, crashes (connection reset or silent) and slow
listeners run on the simulator; the trace must show that

* after a client's REVOKE of a queue it never pulls (REBAL-4) nor commits (REBAL-5) that queue again
  until it is assigned it anew: in-flight results of a dropped queue are discarded;
* a newly assigned queue starts from the committed offset (REBAL-6);
* once the group is stable, every queue has exactly one owner (REBAL-2).

The first three need no quiescence, so their runs settle only briefly; ownership is judged after the
group has been stable for two rebalance rounds. A failure prints the shrunk schedule, the findings
and a timeline of the queue concerned.
"""

from __future__ import annotations

import pytest
from hypothesis import given

from properties.sim_strategies import membership_steps, run_and_check, scenarios
from reference.client.components import ClientComponents
from reference.sim.scenario import Scenario

DROP_REQUIREMENTS = ("REBAL-4", "REBAL-5", "REBAL-6")
#: Drop semantics are judged on the rows of the faults themselves: settle just long enough for
#: in-flight work to finish (and keep the queue count fixed: one choice fewer to shrink).
SHORT_SETTLE = {"min_settle_ms": 5_000, "stable_ms": 0, "max_settle_ms": 60_000, "queues": 4}
#: Ownership needs two quiet rounds; a group that never stabilises is judged after two more minutes.
OWNERSHIP_SETTLE = {"max_settle_ms": 120_000}


def drop_property(components: ClientComponents | None = None):  # type: ignore[no-untyped-def]
    """REBAL-4/5/6, for the reference client or a seeded fault's components."""

    @given(scenario=scenarios(membership_steps, consumers=(1, 3), max_steps=10, fixed=SHORT_SETTLE))
    def prop(scenario: Scenario) -> None:
        run_and_check(scenario, components, checks=("drop", "start"), requirements=DROP_REQUIREMENTS)

    return prop


def ownership_property(components: ClientComponents | None = None):  # type: ignore[no-untyped-def]
    """REBAL-2, for the reference client or a seeded fault's components."""

    @given(scenario=scenarios(membership_steps, consumers=(2, 3), max_steps=8, fixed=OWNERSHIP_SETTLE))
    def prop(scenario: Scenario) -> None:
        run_and_check(scenario, components, checks=("ownership",), requirements=("REBAL-2",))

    return prop


@pytest.mark.req(*DROP_REQUIREMENTS)
def test_rebalance_drop_semantics_property() -> None:
    drop_property()()


@pytest.mark.req("REBAL-2")
def test_ownership_converges_property() -> None:
    ownership_property()()
