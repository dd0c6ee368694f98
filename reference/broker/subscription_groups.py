"""The broker's subscription group table, as RocketMQ's SubscriptionGroupManager keeps it.

A consumer group exists on a broker when the table holds its SubscriptionGroupConfig: created by an operator
(UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, ``mqadmin updateSubGroup``), or on first use while the broker's
``autoCreateSubscriptionGroup`` is on (its default): upstream's ``findSubscriptionGroupConfig`` creates a missing
group with default settings when a pop or a heartbeat names it (SubscriptionGroupManager, rocketmq-all-5.3.3).
With auto-creation off, a group the table lacks does not exist: a pop from it is refused with
SUBSCRIPTION_GROUP_NOT_EXIST, and the revive skips its due checkpoints (seed 004 lines 1111-1115, REVIVE-9).

The table is ``config/subscriptionGroup.json`` of the data directory (upstream's file name and its
``subscriptionGroupTable`` key), so a group survives a restart. An operator's change is written at once; a group
created on first use is written at the next change or at shutdown, not on the pop that created it (an fsync per
new group would slow every pop path), and a crash before that loses only what auto-creation makes again.

The gRPC front reads one setting of an operator's config: ``consumeMessageOrderly``, which makes a group a FIFO
group for the RocketMQ 5 proxy (GrpcClientSettingsManager's ``subscription.fifo``, ReceiveMessageActivity's ordered
pop, RouteActivity's per-queue assignment), through :meth:`SubscriptionGroupManager.consumes_orderly`: the table in
memory, which every operator change goes through, so the reader sees what the writer wrote without a file read per
receive.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from reference.rules.errors import InvalidRequest
from reference.store.jsonfile import read_json, write_json_atomic
from reference.store.names import check_name

#: Upstream BrokerConfig.autoCreateSubscriptionGroup's default.
AUTO_CREATE_SUBSCRIPTION_GROUP = True
#: The document key of the table (upstream's SubscriptionGroupManager.encode).
TABLE_KEY = "subscriptionGroupTable"
#: SubscriptionGroupConfig.consumeMessageOrderly: the group consumes in order (a FIFO group over gRPC).
CONSUME_ORDERLY = "consumeMessageOrderly"


def subscription_group_path(data_dir: Path) -> Path:
    """Where a broker on ``data_dir`` keeps its subscription groups (RocketMQ's ``config/subscriptionGroup.json``)."""
    return data_dir / "config" / "subscriptionGroup.json"


def subscription_groups(data_dir: Path) -> dict[str, Any]:
    """Every group's config as the file holds it, by name; empty when none was ever written."""
    doc = read_json(subscription_group_path(data_dir))
    table = doc.get(TABLE_KEY) if isinstance(doc, dict) else None
    return dict(table) if isinstance(table, dict) else {}


class SubscriptionGroupManager:
    """Group name -> its SubscriptionGroupConfig, as sent (a JSON object). ``auto_create`` is read on every look-up,
    since the setting may change while the broker runs."""

    def __init__(self, data_dir: Path, auto_create: Callable[[], bool]) -> None:
        self._path = subscription_group_path(data_dir)
        self._auto_create = auto_create
        self._groups: dict[str, dict[str, Any]] = subscription_groups(data_dir)
        self._dirty = False

    def find(self, group: str) -> dict[str, Any] | None:
        """findSubscriptionGroupConfig: the group's config; a missing one is created while auto-creation is on
        (a name a group may not have is never created), else None."""
        config = self._groups.get(group)
        if config is None and self._auto_create():
            try:
                check_name(group, "consumerGroup")
            except InvalidRequest:
                return None
            config = self._groups[group] = {"groupName": group, "consumeEnable": True}
            self._dirty = True
        return config

    def consumes_orderly(self, group: str) -> bool:
        """Whether ``group``'s config says consumeMessageOrderly; a group with no config does not (RocketMQ's
        default), and asking creates none."""
        config = self._groups.get(group)
        return isinstance(config, dict) and config.get(CONSUME_ORDERLY) is True

    def exists(self, group: str) -> bool:
        """Whether the group exists now, created on first use if auto-creation is on (the revive's check)."""
        return self.find(group) is not None

    def update(self, config: dict[str, Any]) -> None:
        """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: keep ``config`` as sent under its ``groupName``."""
        name = str(config.get("groupName", ""))
        check_name(name, "groupName")
        self._groups[name] = dict(config)
        self.persist()

    def delete(self, group: str) -> bool:
        """DELETE_SUBSCRIPTIONGROUP: remove the group; False when there was none. Its offsets stay (upstream removes
        them only when asked, ``cleanOffset``)."""
        if self._groups.pop(group, None) is None:
            return False
        self.persist()
        return True

    def all(self) -> dict[str, dict[str, Any]]:
        return dict(self._groups)

    def persist(self) -> None:
        write_json_atomic(self._path, {TABLE_KEY: self._groups})
        self._dirty = False

    def shutdown(self) -> None:
        """Write the groups created on first use since the last change."""
        if self._dirty:
            self.persist()
