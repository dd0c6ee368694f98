"""The faulty component classes behind the mutant catalogue. Each overrides one method."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from reference.broker.consumer_manage_processor import ConsumerManageProcessor
from reference.broker.consumer_manager import ConsumerGroupInfo, ConsumerManager
from reference.broker.hold_service import PullRequestHoldService
from reference.broker.protocol import Channel, PullMessageRequest, QueryOffsetResult
from reference.broker.pull_processor import HeldPullRequest, PullMessageProcessor
from reference.rules.codes import STATUS_TO_CODE, ResponseCode
from reference.rules.filter import SubscriptionData
from reference.rules.status import CORRECTION_TABLE, CorrectionRow, GetMessageStatus
from reference.store.store import MessageStore


class HoldWithoutRecheck(PullRequestHoldService):
    def suspend_pull_request(self, held: HeldPullRequest) -> None:
        self._table.setdefault((held.request.topic, held.request.queue_id), []).append(held)


class HoldWakesOnAnyArrival(PullRequestHoldService):
    def on_message_arriving(
        self, topic: str, queue_id: int, max_offset: int, tags_code: int | None, store_timestamp: int
    ) -> None:
        for held in self._table.pop((topic, queue_id), []):
            self._wake(held)


class HoldAnswersTwice(PullRequestHoldService):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        answer = self._wake

        def answer_and_keep(request: HeldPullRequest) -> None:
            answer(request)
            key = (request.request.topic, request.request.queue_id)
            if self.clock.now_ms() < request.deadline_ms and request not in self._table.get(key, []):
                self._table.setdefault(key, []).append(request)  # still held: its deadline answers it again

        self._wake = answer_and_keep


class HoldIgnoresDeadline(PullRequestHoldService):
    def check_hold_requests(self) -> None:
        for (topic, queue_id), requests in list(self._table.items()):
            newest = self.store.get_max_offset_in_queue(topic, queue_id)
            for held in list(requests):
                if newest > held.pull_from_this_offset and self._has_match(held, newest):
                    requests.remove(held)
                    self._wake(held)


class _SubVersionGroup(ConsumerGroupInfo):
    def update_subscription(self, subs: Iterable[SubscriptionData], now: int) -> bool:
        subs = list(subs)
        bumped = any(
            s.topic in self.subscription_table and s.sub_version > self.subscription_table[s.topic].sub_version
            for s in subs
        )
        return super().update_subscription(subs, now) or bumped


class _NoRemovalGroup(ConsumerGroupInfo):
    def update_subscription(self, subs: Iterable[SubscriptionData], now: int) -> bool:
        subs = list(subs)
        added = False
        for sub in subs:
            old = self.subscription_table.get(sub.topic)
            if old is None:
                self.subscription_table[sub.topic] = sub
                added = True
            elif sub.sub_version > old.sub_version:
                self.subscription_table[sub.topic] = sub
        return added


class _GroupClassManager(ConsumerManager):
    group_class: type[ConsumerGroupInfo] = ConsumerGroupInfo

    def register_consumer(self, info, data):  # type: ignore[no-untyped-def]
        if data.group not in self.consumer_table:
            self.consumer_table[data.group] = self.group_class(
                data.group, data.consume_type, data.message_model, data.consume_from_where
            )
        return super().register_consumer(info, data)


class SubVersionIsChange(_GroupClassManager):
    group_class = _SubVersionGroup


class IgnoresTopicRemoval(_GroupClassManager):
    group_class = _NoRemovalGroup


class NoNotifyOnUnregister(ConsumerManager):
    def unregister_consumer(self, group_name: str, channel: Channel) -> bool:
        group = self.consumer_table.get(group_name)
        if group is None or group.channel_info_table.pop(channel.key, None) is None:
            return False
        if not group.channel_info_table:
            self.consumer_table.pop(group_name, None)
        return True


# -- offset correction (the store's CORRECTION_TABLE with one row wrong) --------------------------
def _with_row(status: GetMessageStatus, condition: str, next_offset) -> tuple[CorrectionRow, ...]:  # type: ignore[no-untyped-def]
    """CORRECTION_TABLE with the row of ``condition`` answering ``next_offset`` instead."""
    return tuple(
        dataclasses.replace(row, next_offset=next_offset) if row.condition == condition and row.status == status
        else row
        for row in CORRECTION_TABLE
    )


class EmptyQueueKeepsOffset(MessageStore):
    """NO_MESSAGE_IN_QUEUE answers nextBeginOffset = the requested offset instead of 0."""

    correction_table = _with_row(GetMessageStatus.NO_MESSAGE_IN_QUEUE, "max == 0", lambda o, lo, hi: o)


class TooSmallKeepsOffset(MessageStore):
    """OFFSET_TOO_SMALL answers nextBeginOffset = the requested offset: the consumer never catches up."""

    correction_table = _with_row(GetMessageStatus.OFFSET_TOO_SMALL, "offset < min", lambda o, lo, hi: o)


class OverflowBadlyKeepsOffset(MessageStore):
    """OFFSET_OVERFLOW_BADLY with min offset 0 answers the requested offset (neither 0 nor the max).

    Answering the max is no fault: Apache RocketMQ does so since 4.9.4 (OFFSET-4 allows both)."""

    correction_table = _with_row(
        GetMessageStatus.OFFSET_OVERFLOW_BADLY, "offset > max and min == 0", lambda o, lo, hi: o
    )


# -- retention ------------------------------------------------------------------------------------
class RetentionIgnoresReservedTime(MessageStore):
    """Deletes every commit-log segment but the newest, however young its messages."""

    def clean_commit_log(self) -> int:
        if not self._clean.deletion_triggered():
            return 0
        return self._commit_log.delete_expired(lambda newest_store_timestamp: True, self.config.delete_files_batch_max)


class RetentionNeverRaisesMin(MessageStore):
    """Deletes files but never corrects the queues' min offsets."""

    def correct_min_offsets(self) -> None:
        return None


# -- query offset, pull codes, commit piggyback, registry expiry ---------------------------------
class QueryFallsBackToMin(ConsumerManageProcessor):
    """With no committed offset, answers the queue's min offset instead of QUERY_NOT_FOUND."""

    def query_consumer_offset(self, group: str, topic: str, queue_id: int) -> QueryOffsetResult:
        offset = self.offsets.query_offset(group, topic, queue_id)
        if offset >= 0:
            return QueryOffsetResult(ResponseCode.SUCCESS, offset)
        return QueryOffsetResult(ResponseCode.SUCCESS, self.store.get_min_offset_in_queue(topic, queue_id))


class NoMatchIsNotFound(PullMessageProcessor):
    """NO_MATCHED_MESSAGE answers PULL_NOT_FOUND (the consumer waits) instead of PULL_RETRY_IMMEDIATELY."""

    code_table = {**STATUS_TO_CODE, GetMessageStatus.NO_MATCHED_MESSAGE: ResponseCode.PULL_NOT_FOUND}


class CommitAgainOnWake(PullMessageProcessor):
    """A held pull's piggybacked commit is stored again when the request is re-executed on wake-up."""

    def store_offset_enable(self, request: PullMessageRequest, broker_allow_suspend: bool) -> bool:
        return request.has_commit_offset


class ChannelsNeverExpire(ConsumerManager):
    """The housekeeping scan never removes a silent channel."""

    def scan_not_active_channel(self) -> list[tuple[str, str]]:
        return []
