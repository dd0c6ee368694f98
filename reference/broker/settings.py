"""Broker settings changed while it runs, by RocketMQ's property names (its UPDATE_BROKER_CONFIG).

An operator of a RocketMQ broker changes ``longPollingEnable``, ``deleteWhen``, ``fileReservedTime``,
``diskMaxUsedSpaceRatio``, ``accessMessageInMemoryMaxRatio``, ``enablePopBufferMerge`` or
``autoCreateSubscriptionGroup`` without a restart, and the broker reads each of them again where it uses it (the
hold service's wait and the dispatch's arrival notice; every clean run; every pull that asks whether a message is in
disk; every checkpoint a pop or an ack adds; every look-up of a group). The
reference does the same: its runner (``mqtck broker --remoting --control``) offers this as the control channel's
``POST /config``, so a conformance test can switch to short polling, make retention fire or buffer checkpoints, on
the reference and on a real broker alike. The runner puts the changed settings on the new broker after a restart,
as RocketMQ keeps them (its UPDATE_BROKER_CONFIG writes them to the broker's configuration file).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from reference.broker.broker import Broker

#: RocketMQ property name -> (the object holding it: "broker" or "store", the reference's field).
SETTINGS: dict[str, tuple[str, str]] = {
    "longPollingEnable": ("broker", "long_polling_enable"),
    "deleteWhen": ("store", "delete_when"),
    "fileReservedTime": ("store", "file_reserved_time_hours"),
    "diskMaxUsedSpaceRatio": ("store", "disk_max_used_space_ratio"),
    "accessMessageInMemoryMaxRatio": ("store", "access_message_in_memory_max_ratio"),
    "enablePopBufferMerge": ("pop", "enable_pop_buffer_merge"),
    "autoCreateSubscriptionGroup": ("broker", "auto_create_subscription_group"),
}
#: The settings that are true or false.
BOOLEAN_SETTINGS = frozenset({"longPollingEnable", "enablePopBufferMerge", "autoCreateSubscriptionGroup"})


def apply_settings(broker: Broker, settings: dict[str, Any]) -> dict[str, Any]:
    """Apply ``settings`` to the running broker, all or none; return the values they replaced.

    A value is checked by the configuration's own rules first (ValueError naming the property), so a bad
    one changes nothing."""
    unknown = sorted(set(settings) - set(SETTINGS))
    if unknown:
        raise ValueError(f"{unknown[0]}: not a setting that changes at run time ({', '.join(SETTINGS)})")
    for name, value in settings.items():
        _, field = SETTINGS[name]
        if name in BOOLEAN_SETTINGS and not isinstance(value, bool):
            raise ValueError(f"{name}: must be true or false, got {value!r}")
    store_changes = {SETTINGS[n][1]: v for n, v in settings.items() if SETTINGS[n][0] == "store"}
    if store_changes:
        try:  # the store config's own checks, on a copy
            dataclasses.replace(broker.store.config, **store_changes)
        except (ValueError, TypeError, AttributeError) as exc:
            raise ValueError(f"{_name_of(str(exc))}: {exc}") from None
    previous = {name: getattr(_holder(broker, name), SETTINGS[name][1]) for name in settings}
    for name, value in settings.items():
        setattr(_holder(broker, name), SETTINGS[name][1], value)
    return previous


def _holder(broker: Broker, name: str) -> Any:
    return {"broker": broker.config, "store": broker.store.config, "pop": broker.pop_service.config}[SETTINGS[name][0]]


def _name_of(message: str) -> str:
    """The RocketMQ name of the store field a config error names."""
    for name, (_, field) in SETTINGS.items():
        if field in message:
            return name
    return "settings"
