"""White-listed remote addresses of ACL 1.0: which clients skip the signature check.

The patterns RocketMQ 4.9.7's ``RemoteAddressStrategyFactory`` reads, for IPv4 clients (the servers bind IPv4):

* blank: matches nothing (an account without ``whiteRemoteAddress``);
* ``*`` or ``*.*.*.*``: every address;
* a set in the last segment, ``192.168.1.{1,2}``, or a comma list of addresses: exactly those;
* ``*`` or a range ``a-b`` in a segment after the first, ``192.168.1.*``, ``192.168.1.10-20``, ``192.168.*.*``;
* an address: exactly that one.

RocketMQ checks a range pattern's first wildcard segment only, ignoring the segments after it (``192.*.1.*``
matches 192.7.2.9). Such a pattern is refused here when the file is read, as is any pattern RocketMQ refuses,
so that a file the reference accepts never lets in a client RocketMQ would not, nor the other way round.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

#: Patterns meaning "every address".
EVERY_ADDRESS = frozenset({"*", "*.*.*.*"})


@dataclass(frozen=True)
class AddressPattern:
    """One pattern: ``every`` address, a set of ``addresses``, or ``head`` segments followed by one segment in
    [``low``, ``high``] (the rest any)."""

    text: str
    every: bool = False
    addresses: frozenset[str] = frozenset()
    head: tuple[int, ...] | None = None
    low: int = 0
    high: int = 255

    def matches(self, address: str) -> bool:
        if self.every:
            return True
        if self.head is None:
            return address in self.addresses
        parts = address.split(".")
        if len(parts) != 4 or not all(p.isdigit() for p in parts):
            return False
        index = len(self.head)
        return tuple(int(p) for p in parts[:index]) == self.head and self.low <= int(parts[index]) <= self.high


NOTHING = AddressPattern("")


def _address(text: str, pattern: str) -> str:
    try:
        return str(ipaddress.IPv4Address(text.strip()))
    except ValueError:
        raise ValueError(f"{pattern!r}: {text.strip()!r} is not an IPv4 address") from None


def _octet(text: str, pattern: str) -> int:
    if not (text.isdigit() and int(text) <= 255):
        raise ValueError(f"{pattern!r}: {text!r} is not an address segment (0-255)")
    return int(text)


def _range(pattern: str) -> AddressPattern:
    parts = [p.strip() for p in pattern.split(".")]
    if len(parts) != 4:
        raise ValueError(f"{pattern!r}: a range pattern has four segments, as 192.168.1.* or 192.168.1.10-20")
    index = next((i for i in (1, 2, 3) if parts[i] == "*" or "-" in parts[i]), None)
    if index is None:
        raise ValueError(f"{pattern!r}: '*' or a range a-b may stand only in the second to fourth segment")
    head = tuple(_octet(p, pattern) for p in parts[:index])
    if any(p != "*" for p in parts[index + 1:]):
        raise ValueError(f"{pattern!r}: the segments after the first '*' or range must be '*' (RocketMQ "
                         f"checks only the first wildcard segment)")
    if parts[index] == "*":
        return AddressPattern(pattern, head=head)
    low, _, high = parts[index].partition("-")
    if not (low.isdigit() and high.isdigit() and int(low) <= int(high) <= 255 and int(high) > 0):
        raise ValueError(f"{pattern!r}: the range {parts[index]!r} must be a-b with 0 <= a <= b <= 255, b > 0")
    return AddressPattern(pattern, head=head, low=int(low), high=int(high))


def parse_pattern(text: str | None) -> AddressPattern:
    """The pattern ``text`` (None or blank: matches nothing); ValueError naming the pattern if unreadable."""
    pattern = (text or "").strip()
    if not pattern:
        return NOTHING
    if pattern in EVERY_ADDRESS:
        return AddressPattern(pattern, every=True)
    if ":" in pattern:
        raise ValueError(f"{pattern!r}: only IPv4 clients can be white-listed (the servers bind IPv4)")
    if pattern.endswith("}"):
        prefix, brace, members = pattern.partition("{")
        if not brace or prefix.count(".") != 3 or not prefix.endswith("."):
            raise ValueError(f"{pattern!r}: a set must be the last segment, as in 192.168.1.{{1,2}}")
        return AddressPattern(pattern, addresses=frozenset(
            _address(prefix + m, pattern) for m in members[:-1].split(",") if m.strip()))
    if "," in pattern:
        return AddressPattern(pattern, addresses=frozenset(_address(a, pattern) for a in pattern.split(",") if a))
    if "*" in pattern or "-" in pattern:
        return _range(pattern)
    return AddressPattern(pattern, addresses=frozenset({_address(pattern, pattern)}))
