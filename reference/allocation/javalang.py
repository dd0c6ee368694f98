"""The few ``java.lang.String`` and commons-lang behaviours the strategies' results depend on.

They matter at the edges the golden vectors probe: ``"room1@".split("@")`` has one part in Java (the
trailing empty string is dropped) but two in Python, and ``StringUtils.isBlank`` uses Java's idea of
whitespace, which is narrower than ``str.isspace`` (no-break spaces are not blank in Java).
"""

from __future__ import annotations

import unicodedata

#: Control characters ``Character.isWhitespace`` accepts besides the Unicode space separators.
_JAVA_WHITESPACE_CONTROLS = frozenset("\t\n\u000b\f\r\u001c\u001d\u001e\u001f")
#: Space separators that Java explicitly does *not* count as whitespace (they are non-breaking).
_JAVA_NON_BREAKING = frozenset("\u00a0\u2007\u202f")


def java_split(s: str, sep: str) -> list[str]:
    """``String.split`` with a one-character literal separator and no limit: trailing empty strings
    are removed, and a string without the separator comes back whole (so ``""`` gives ``[""]``)."""
    if sep not in s:
        return [s]
    parts = s.split(sep)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def java_is_whitespace(ch: str) -> bool:
    """``Character.isWhitespace`` for one code point."""
    if ch in _JAVA_WHITESPACE_CONTROLS:
        return True
    return unicodedata.category(ch) in ("Zs", "Zl", "Zp") and ch not in _JAVA_NON_BREAKING


def is_empty(s: str | None) -> bool:
    """commons-lang ``StringUtils.isEmpty``: null or ``""``."""
    return s is None or s == ""


def is_blank(s: str | None) -> bool:
    """commons-lang ``StringUtils.isBlank``: null, ``""`` or only Java whitespace."""
    return s is None or all(java_is_whitespace(ch) for ch in s)
