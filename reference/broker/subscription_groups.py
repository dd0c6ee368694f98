"""The subscription group configs mqadmin keeps on the broker (``config/subscriptionGroup.json``).

The remoting front's UPDATE_AND_CREATE_SUBSCRIPTIONGROUP writes them (:mod:`reference.net.remoting.admin_groups`);
the gRPC front reads one setting of them: ``consumeMessageOrderly``, which makes a group a FIFO group for the
RocketMQ 5 proxy (GrpcClientSettingsManager's ``subscription.fifo``, ReceiveMessageActivity's ordered pop,
RouteActivity's per-queue assignment). One module owns where they live and how a setting is read, so the writer
and the reader cannot drift apart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reference.store.jsonfile import read_json

#: SubscriptionGroupConfig.consumeMessageOrderly: the group consumes in order (a FIFO group over gRPC).
CONSUME_ORDERLY = "consumeMessageOrderly"


def subscription_group_path(data_dir: Path) -> Path:
    """Where a broker on ``data_dir`` keeps its subscription groups (RocketMQ's ``config/subscriptionGroup.json``)."""
    return data_dir / "config" / "subscriptionGroup.json"


def subscription_groups(data_dir: Path) -> dict[str, Any]:
    """Every group's config as mqadmin sent it, by name; empty when none was ever created."""
    doc = read_json(subscription_group_path(data_dir))
    table = doc.get("subscriptionGroupTable") if isinstance(doc, dict) else None
    return dict(table) if isinstance(table, dict) else {}


def consumes_orderly(data_dir: Path, group: str) -> bool:
    """Whether ``group``'s config says consumeMessageOrderly (a group with no config does not: RocketMQ's default)."""
    config = subscription_groups(data_dir).get(group)
    return isinstance(config, dict) and config.get(CONSUME_ORDERLY) is True
