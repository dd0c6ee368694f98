"""Errors the reference returns for bad input.

A request that breaks a rule is refused with :class:`InvalidRequest`, naming the field and the rule,
before anything changes: transports map it to an HTTP 4xx JSON body, a remoting error code or a CLI
exit 2 with one line. Nothing here is ever raised for a state the broker itself got into.
"""

from __future__ import annotations


class InvalidRequest(ValueError):
    """A request field broke a rule. ``code`` is stable and machine-readable."""

    def __init__(self, field: str, rule: str, code: str = "INVALID_ARGUMENT") -> None:
        super().__init__(f"{field}: {rule}")
        self.field = field
        self.rule = rule
        self.code = code

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "field": self.field, "rule": self.rule}


class TopicNotFound(InvalidRequest):
    def __init__(self, topic: str) -> None:
        super().__init__("topic", f"topic {topic!r} does not exist on this broker", "TOPIC_NOT_EXIST")


def require(condition: bool, field: str, rule: str, code: str = "INVALID_ARGUMENT") -> None:
    """Raise :class:`InvalidRequest` unless ``condition`` holds."""
    if not condition:
        raise InvalidRequest(field, rule, code)
