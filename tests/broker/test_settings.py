"""Settings changed while the broker runs (``reference.broker.settings``), on simulated time: the hold service
and the clean service read them again where they use them, as RocketMQ's do."""

from __future__ import annotations

import datetime

import pytest

from properties.harness import sim_broker
from reference.broker.protocol import PullMessageRequest, RecordingChannel
from reference.broker.settings import apply_settings
from reference.rules.codes import ResponseCode
from reference.store.message import Message

HOUR_MS = 3_600_000


@pytest.mark.req("LPOLL-6", "LPOLL-4")
def test_long_polling_switched_off_and_on_at_run_time() -> None:
    with sim_broker() as (broker, clock, _):
        assert apply_settings(broker, {"longPollingEnable": False}) == {"longPollingEnable": True}
        clock.advance(5_000)  # the wait the hold service was in when the setting changed
        ch = RecordingChannel("c")
        assert broker.pull(PullMessageRequest("G", "T", 0, 0, suspend_timeout_ms=15_000), ch) is None
        broker.send(Message("T", b"x", 0, tags="A"))
        assert ch.pull_responses == [], "with long polling off an arrival wakes nothing"
        clock.advance(1_000)
        (_, answer), = ch.pull_responses
        assert answer.code == ResponseCode.SUCCESS, "the next 1 s check answers it"
        apply_settings(broker, {"longPollingEnable": True})
        clock.advance(1_000)
        assert broker.pull(PullMessageRequest("G", "T", 0, 1, suspend_timeout_ms=15_000), ch) is None
        broker.send(Message("T", b"y", 0, tags="A"))
        assert len(ch.pull_responses) == 2, "long polling back on: the arrival wakes the held pull at once"


@pytest.mark.req("RETAIN-2")
def test_delete_when_is_read_at_every_clean_run() -> None:
    with sim_broker() as (broker, clock, _):
        while broker.store.get_commit_log_max_offset() < 3 * broker.store.config.commit_log_segment_bytes:
            broker.send(Message("T", b"x" * 500, 0, tags="A"))
        clock.advance(73 * HOUR_MS)  # every closed segment is past fileReservedTime
        hour = datetime.datetime.fromtimestamp(clock.now_ms() / 1000, datetime.UTC).hour
        apply_settings(broker, {"deleteWhen": f"{(hour + 12) % 24:02d}"})
        assert broker.store.run_retention() == 0, "not a deleteWhen hour (and the disk is below its ratio)"
        apply_settings(broker, {"deleteWhen": f"{hour:02d}"})
        assert broker.store.run_retention() >= 2, "the new deleteWhen names this hour"


def test_a_bad_setting_changes_nothing_and_names_itself() -> None:
    with sim_broker() as (broker, _, _):
        before = (broker.config.long_polling_enable, broker.store.config.delete_when,
                  broker.store.config.file_reserved_time_hours)
        for bad, name in (({"deleteWhen": "25"}, "deleteWhen"), ({"longPollingEnable": "no"}, "longPollingEnable"),
                          ({"fileReservedTime": -1}, "fileReservedTime"), ({"brokerName": "b"}, "brokerName")):
            with pytest.raises(ValueError, match=f"^{name}: "):
                apply_settings(broker, {"longPollingEnable": False, **bad})
        assert (broker.config.long_polling_enable, broker.store.config.delete_when,
                broker.store.config.file_reserved_time_hours) == before
