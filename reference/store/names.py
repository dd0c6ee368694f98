"""Topic and group names: one rule, RocketMQ's Validators (``^[%|a-zA-Z0-9_-]+$``, at most 127 chars).

Why it matters to the store: a topic name becomes a directory under ``consumequeue/`` and part of the
``topic@group`` offset-table key, so a name with "/" or "@" would escape its directory or make two
keys collide. The 127-character bound is also what the remoting protocol's one-byte topic length
allows.
"""

from __future__ import annotations

import re

from reference.rules.errors import InvalidRequest, require

#: Characters allowed in a topic or group name (RocketMQ's VALID_PATTERN_STR).
NAME_PATTERN = re.compile(r"[%|a-zA-Z0-9_-]+")
#: Longest topic or group name (RocketMQ 4.x TOPIC_MAX_LENGTH).
MAX_NAME_LENGTH = 127


def check_name(value: object, field: str) -> None:
    """Raise InvalidRequest naming ``field`` unless ``value`` is a valid topic/group name."""
    if not isinstance(value, str) or not value:
        raise InvalidRequest(field, "must be a non-empty string")
    require(len(value) <= MAX_NAME_LENGTH, field, f"must be at most {MAX_NAME_LENGTH} characters")
    require(
        NAME_PATTERN.fullmatch(value) is not None,
        field,
        "may contain only letters, digits, '%', '|', '_' and '-'",
    )
