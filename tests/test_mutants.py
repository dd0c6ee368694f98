"""Every seeded fault of the broker is caught by a property suite, with a shrunk example."""

from __future__ import annotations

import pytest
from hypothesis import settings

from conformance.mutants import CATALOGUE
from properties.allocation.test_allocation_formulas import averagely_property, by_circle_property
from properties.test_at_least_once import at_least_once_property
from properties.test_consumer_registry import registry_property
from properties.test_correction_rules import correction_property
from properties.test_long_poll import long_poll_property
from properties.test_permit_limits_properties import filter_property, rate_property, unacked_property
from properties.test_permits_properties import permit_property
from properties.test_pop_properties import pop_broker_property
from properties.test_pull_processor import (
    commit_piggyback_property,
    pull_code_property,
    query_offset_property,
)
from properties.test_rebalance_drop import drop_property, ownership_property

#: Mutant -> the property that must fail on it.
KILLERS = {
    "hold-no-recheck-7358": lambda m: long_poll_property(m.components.hold_service),
    "hold-answers-twice": lambda m: long_poll_property(m.components.hold_service),
    "hold-wake-any-arrival": lambda m: long_poll_property(m.components.hold_service),
    "hold-ignore-deadline": lambda m: long_poll_property(m.components.hold_service),
    "registry-subversion-is-change": lambda m: registry_property(m.components.consumer_manager),
    "registry-ignores-topic-removal": lambda m: registry_property(m.components.consumer_manager),
    "registry-no-notify-on-unregister": lambda m: registry_property(m.components.consumer_manager),
    "registry-channels-never-expire": lambda m: registry_property(m.components.consumer_manager),
    "offset-empty-queue-keeps-offset": lambda m: correction_property(m.components.message_store),
    "offset-too-small-keeps-offset": lambda m: correction_property(m.components.message_store),
    "offset-overflow-badly-keeps-offset": lambda m: correction_property(m.components.message_store),
    "retention-ignores-reserved-time": lambda m: correction_property(m.components.message_store),
    "retention-never-raises-min": lambda m: correction_property(m.components.message_store),
    "query-offset-min-fallback": lambda m: query_offset_property(m.components.consumer_manage_processor),
    "pull-no-match-not-found": lambda m: pull_code_property(m.components.pull_processor),
    "pull-commit-again-on-wake": lambda m: commit_piggyback_property(m.components.pull_processor),
    "alloc-averagely-remainder-to-last": lambda m: averagely_property(m.strategies["averagely"]),
    "alloc-circle-starts-at-second": lambda m: by_circle_property(m.strategies["by_circle"]),
    "pop-revive-ignores-late-acks": lambda m: pop_broker_property(m.components),
    "pop-ack-key-without-pop-time": lambda m: pop_broker_property(m.components),
    "pop-invisible-from-request": lambda m: pop_broker_property(m.components),
    "pop-change-keeps-the-instant": lambda m: pop_broker_property(m.components),
    "flow-batch-counts-as-one-permit": lambda m: permit_property(m.components),
    "flow-permits-go-negative": lambda m: permit_property(m.components),
    "flow-filter-sends-every-entry": lambda m: filter_property(m.components),
    "flow-ignores-dispatch-rate": lambda m: rate_property(m.components),
    "flow-unacked-released-below-limit": lambda m: unacked_property(m.components),
    "client-pulls-dropped-queue": lambda m: drop_property(m.client),
    "client-commits-dropped-results": lambda m: drop_property(m.client),
    "client-commits-largest-consumed": lambda m: at_least_once_property(m.client),
    "client-unsorted-consumer-ids": lambda m: ownership_property(m.client),
}


#: Examples a killer may take. The slowest killer measured, the drop property on
#: client-commits-dropped-results, first fails after 41-187 random examples (12 seeds; 118 in the ci
#: profile's derandomized run): about 1 in 90 scenarios drops a queue while its listener runs. With 300 a
#: random run would miss it about 4 % of the time, and it once did in CI (cause not found: the ci
#: profile is derandomized); 600 makes a miss about 0.1 % likely and costs nothing when a killer succeeds.
KILL_EXAMPLES = 600


def test_every_mutant_has_a_killer() -> None:
    assert set(KILLERS) == set(CATALOGUE)


def failure_notes(prop) -> str:  # type: ignore[no-untyped-def]
    """Run a property that must fail; return Hypothesis's notes (the shrunk example(s)).

    Hypothesis raises the AssertionError itself, or an ExceptionGroup when it found several
    distinct failures; either way every failure must be an assertion of the property.
    """
    try:
        prop()
    except AssertionError as exc:
        failures: list[BaseException] = [exc]
    except BaseExceptionGroup as group:
        failures = list(group.exceptions)
    else:
        pytest.fail("the property passed on a mutant")
    unexpected = [f for f in failures if not isinstance(f, AssertionError)]
    assert not unexpected, f"the harness itself broke: {unexpected!r}"
    return "\n".join(n for f in failures for n in getattr(f, "__notes__", []))


@pytest.mark.parametrize("name", sorted(CATALOGUE))
def test_property_suite_kills_mutant(name: str) -> None:
    notes = failure_notes(settings(max_examples=KILL_EXAMPLES)(KILLERS[name](CATALOGUE[name])))
    assert "Failing test case" in notes or "Falsifying example" in notes, "no shrunk counterexample printed"


@pytest.mark.req("LPOLL-9")
def test_7358_race_shrinks_to_an_arrival_between_not_found_and_suspend() -> None:
    prop = long_poll_property(CATALOGUE["hold-no-recheck-7358"].components.hold_service)
    notes = failure_notes(settings(max_examples=300)(prop))
    assert "arrivals_before_suspend=('" in notes, notes
