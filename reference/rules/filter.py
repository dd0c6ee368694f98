"""Tag filtering: the tags hash code kept in each consume-queue unit, and tag subscriptions.

The broker filters a pull by comparing 8-byte hash codes, never strings (seed 002 §1:
``messageFilter.isMessageMatched(subscriptionData, tagsCode)``), so the code must be bit-for-bit
Java's ``String.hashCode()`` of the tag or a Java client's subscription would select the wrong
messages. The client re-checks the tag string itself (``matches_tag``) because different tags can
share a hash code.
"""

from __future__ import annotations

from dataclasses import dataclass

from reference.rules.errors import InvalidRequest

#: The expression meaning "every message" (RocketMQ's SubscriptionData.SUB_ALL).
SUB_ALL = "*"
#: Separator between tags in an expression ("TagA || TagB").
TAG_SEPARATOR = "||"
#: Longest tag accepted, in characters.
MAX_TAG_LENGTH = 255


def tags_hash_code(tag: str) -> int:
    """Java ``String.hashCode()`` of ``tag``: 31-polynomial over UTF-16 code units, as a signed
    32-bit int (stored widened to int64 in the consume queue). A character outside the BMP counts as
    its two surrogates, exactly as in Java."""
    units = tag.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def tag_rule_broken(tag: str) -> str | None:
    """Why ``tag`` cannot be a tag (None if it can). One rule for message tags and subscription
    pieces, so that every storable tag can also be subscribed to."""
    if len(tag) > MAX_TAG_LENGTH:
        return f"a tag is at most {MAX_TAG_LENGTH} characters"
    if any(ch.isspace() for ch in tag):
        return "a tag contains no whitespace"
    if TAG_SEPARATOR in tag:
        return f"a tag cannot contain the separator {TAG_SEPARATOR!r}"
    return None


@dataclass(frozen=True)
class SubscriptionData:
    """A group's tag subscription to one topic: all messages, or those whose tag is in ``tags``."""

    topic: str
    expression: str
    tags: frozenset[str]
    codes: frozenset[int]
    sub_version: int = 0

    @property
    def subscribes_all(self) -> bool:
        """True for "*": every message matches, so callers may skip per-message checks."""
        return self.expression == SUB_ALL

    @classmethod
    def parse(cls, topic: str, expression: str | None, sub_version: int = 0) -> SubscriptionData:
        """Parse a TAG expression: None, "" or "*" subscribe to everything; otherwise tags separated
        by "||", each stripped of surrounding blanks, empty pieces ignored (RocketMQ's
        FilterAPI.buildSubscriptionData). Raises InvalidRequest(expression, ..., INVALID_FILTER) for
        an expression naming no tag or a piece that is not a valid tag."""
        if expression is None or expression.strip() in ("", SUB_ALL):
            return cls(topic, SUB_ALL, frozenset(), frozenset(), sub_version)
        tags = []
        for piece in expression.split(TAG_SEPARATOR):
            tag = piece.strip()
            if not tag:
                continue
            broken = tag_rule_broken(tag)
            if broken is not None:
                raise InvalidRequest("expression", f"{broken}, got {tag!r}", "INVALID_FILTER")
            tags.append(tag)
        if not tags:
            raise InvalidRequest("expression", "must be '*' or name at least one tag", "INVALID_FILTER")
        return cls(
            topic, expression, frozenset(tags), frozenset(tags_hash_code(t) for t in tags), sub_version
        )

    def matches(self, tags_code: int | None) -> bool:
        """Broker-side match on a consume-queue unit's hash code; an unknown code (None) matches, as
        RocketMQ's isMatchedByConsumeQueue does when it has no code to compare."""
        return self.subscribes_all or tags_code is None or tags_code in self.codes

    def matches_tag(self, tag: str | None) -> bool:
        """Client-side match on the tag string, which also rejects hash collisions."""
        return self.subscribes_all or tag in self.tags
