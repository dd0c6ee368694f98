"""The permit dispatcher's limit settings (FLOW-13's rate, FLOW-14's unacked bound) are set by Pulsar's names and
checked all or none. This is the reference's own control API, not a behaviour of seed 003, so it is tested here
rather than in the conformance suite, where a passing setting check would have let FLOW-13 pass on a target whose
rate was never exercised."""

from __future__ import annotations

import pytest

from reference.broker.permits.limits import RATE_SETTING, UNACKED_SETTING, PermitLimits
from reference.rules.errors import InvalidRequest


@pytest.mark.parametrize("bad", [-1, "3", True, 1.5])
@pytest.mark.parametrize("name", [RATE_SETTING, UNACKED_SETTING])
def test_a_bad_limit_is_refused_naming_the_setting_and_changes_nothing(name: str, bad: object) -> None:
    limits = PermitLimits()
    before = (limits.dispatch_rate_msgs, limits.max_unacked_per_consumer)
    with pytest.raises(InvalidRequest) as err:
        limits.change({RATE_SETTING: 3, name: bad})
    assert name in str(err.value) and ">= 0" in str(err.value)
    assert (limits.dispatch_rate_msgs, limits.max_unacked_per_consumer) == before, "all or none"


def test_an_unknown_setting_is_refused() -> None:
    with pytest.raises(InvalidRequest) as err:
        PermitLimits().change({"maxUnackedMessagesPerSubscription": 3})
    assert "not a dispatch limit" in str(err.value)


def test_a_change_returns_the_values_it_replaced() -> None:
    limits = PermitLimits()
    assert limits.change({RATE_SETTING: 7}) == {RATE_SETTING: 0}
    assert limits.change({RATE_SETTING: 0, UNACKED_SETTING: 4})[RATE_SETTING] == 7
    assert limits.max_unacked_per_consumer == 4
