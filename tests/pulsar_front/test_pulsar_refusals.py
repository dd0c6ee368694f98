"""How ``pulsar://`` names the field of a refusal: the reference's front says ``field: rule``; a real Pulsar says prose
("Exclusive consumer is already connected"), and mqtck diff compares the field a refusal names (INPUT-4), so the
target names it by the ServerError (found by ``mqtck diff --target peer:pulsar-4.0.7``)."""

from __future__ import annotations

from conformance.targets.pulsar import _refusal
from reference.net.pulsar.schema import pb


def test_the_reference_fronts_field_and_rule_are_kept() -> None:
    error = _refusal(pb.ServerError_.ConsumerBusy, "consumerName: 'p0' is already subscribed")
    assert (error.code, error.field, error.rule) == ("CONSUMER_BUSY", "consumerName", "'p0' is already subscribed")


def test_a_real_brokers_consumer_busy_prose_names_the_subscription_type() -> None:
    """Pulsar 4.0.7's two ConsumerBusy refusals of a SUBSCRIBE (AbstractDispatcherSingleActiveConsumer, and
    AbstractSubscription's type check): both are what the reference refuses naming subType."""
    for prose in ("Exclusive consumer is already connected",
                  "Subscription is of different type. Active subscription type of 'Exclusive' is different than the "
                  "connecting consumer's type 'Shared'."):
        error = _refusal(pb.ServerError_.ConsumerBusy, prose)
        assert (error.code, error.field, error.rule) == ("CONSUMER_BUSY", "subType", prose)


def test_prose_of_another_error_names_no_field() -> None:
    error = _refusal(pb.ServerError_.ServiceNotReady, "Consumer is already present on the connection")
    assert (error.field, error.rule) == ("", "Consumer is already present on the connection")
