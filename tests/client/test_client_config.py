"""Consumer settings: the seeds' constants as defaults, bad values refused with the field named."""

from __future__ import annotations

import pytest

from reference.client.config import ClientConfig, ConsumeFromWhere, ConsumerConfig, MessageModel
from reference.rules.errors import InvalidRequest


@pytest.mark.req("CLIENT-1", "CLIENT-2")
def test_defaults_are_the_seeds_constants() -> None:
    config = ConsumerConfig("G")
    assert config.pull_batch_size == 32
    assert config.pull_threshold_for_queue == 1_000
    assert config.pull_threshold_size_for_queue_mib == 100
    assert config.pull_time_delay_ms_when_flow_control == 50
    assert config.broker_suspend_max_time_ms == 15_000
    assert config.consumer_timeout_ms_when_suspend == 30_000
    assert config.consume_message_batch_max_size == 1
    assert config.max_reconsume_times == 16
    assert config.message_model is MessageModel.CLUSTERING
    assert config.consume_from_where is ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    client = ClientConfig()
    assert (client.rebalance_interval_ms, client.persist_consumer_offset_interval_ms) == (20_000, 5_000)
    assert ConsumerConfig("G", max_reconsume_times=-1).max_reconsume_times == 16


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"consumer_group": ""}, "consumerGroup"),
        ({"pull_batch_size": 0}, "pullBatchSize"),
        ({"pull_batch_size": 1025}, "pullBatchSize"),
        ({"consume_message_batch_max_size": 0}, "consumeMessageBatchMaxSize"),
        ({"pull_threshold_for_queue": 0}, "pullThresholdForQueue"),
        ({"consume_thread_min": 0}, "consumeThreadMin"),
        ({"max_reconsume_times": -2}, "maxReconsumeTimes"),
        ({"consumer_timeout_ms_when_suspend": 15_000}, "consumerTimeoutMillisWhenSuspend"),
        ({"pull_interval_ms": -1}, "pull_interval_ms"),
    ],
)
def test_bad_settings_are_refused(kwargs: dict, field: str) -> None:
    kwargs = {"consumer_group": "G", **kwargs}
    with pytest.raises(InvalidRequest) as err:
        ConsumerConfig(**kwargs)
    assert err.value.field == field


def test_bad_client_settings_are_refused() -> None:
    with pytest.raises(InvalidRequest):
        ClientConfig(rebalance_interval_ms=0)
    with pytest.raises(ValueError):
        ConsumerConfig("G", message_model="SOMETIMES")
