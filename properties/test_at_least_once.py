"""At-least-once (ALO) and commit safety (CONSUME-2) of a clustering group on the simulator.

Generated schedules mix producer bursts with every fault the simulator has: consumer crashes (with
the connection reset, or silent until the broker expires the channel), joins and graceful leaves,
slow and failing listeners (retried through %RETRY%), retention deleting unconsumed messages, broker
restarts (graceful, or crashing and recovering its store), network loss and reordering. After the
schedule the run settles; then

* every expected message was consumed OK by the group, or dead-lettered, or expired (ALO-1);
* no COMMIT, the client's or the broker's, ever passed a message the group had not consumed OK or
  handed to %RETRY% (CONSUME-2);
* every duplicate has a cause: retry, crash, broker restart, shutdown, offset move, rebalance (ALO-3).

``test_three_consumer_group_loses_nothing`` runs 200 fixed random crash / join / leave schedules of a
3-consumer group and reports the duplicates it saw by cause.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given

from properties.sim_strategies import all_steps, random_scenario, run_and_check, scenarios
from reference.client.components import ClientComponents
from reference.sim.judges import CAUSES
from reference.sim.scenario import Scenario

REQUIREMENTS = ("ALO-1", "ALO-3", "CONSUME-2")
#: Schedules of the fixed-count run (the issue's "200 random crash/join/leave schedules").
SCHEDULES = 200


def at_least_once_property(components: ClientComponents | None = None):  # type: ignore[no-untyped-def]
    """The property, for the reference client or a seeded fault's components."""

    @given(scenario=scenarios(all_steps, max_steps=10))
    def prop(scenario: Scenario) -> None:
        run_and_check(scenario, components, checks=("commit_safety", "at_least_once", "duplicates"),
                      requirements=REQUIREMENTS)

    return prop


@pytest.mark.req(*REQUIREMENTS)
def test_at_least_once_property() -> None:
    at_least_once_property()()


@pytest.mark.req("ALO-1", "ALO-3", "CONSUME-2", "REBAL-2", "REBAL-4", "REBAL-5", "REBAL-6")
def test_three_consumer_group_loses_nothing() -> None:
    """200 random crash / join / leave schedules of a 3-consumer group: nothing lost, every check
    clean, duplicates explained; the counts by cause are printed (``pytest -s``)."""
    causes: Counter[str] = Counter()
    consumed = sent = 0
    for seed in range(SCHEDULES):
        result, report = run_and_check(random_scenario(seed, consumers=3))
        assert result.quiet, f"schedule {seed} did not settle"
        causes.update(report.duplicates)
        consumed += report.stats["consumed_ok"]
        sent += report.stats["sent"]
    assert set(causes) <= set(CAUSES)
    assert causes, "200 crash/join/leave schedules without a single duplicate: the faults did not bite"
    print(f"\n{SCHEDULES} schedules: {sent} messages sent, {consumed} OK consumptions, "
          f"duplicates by cause {dict(causes)}")
