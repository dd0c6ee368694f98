"""The accounts of ACL 1.0, read from a ``plain_acl.yml``-style file, as RocketMQ's PlainPermissionManager reads
``conf/plain_acl.yml``::

    globalWhiteRemoteAddresses: ["10.10.103.*"]
    accounts:
      - accessKey: RocketMQ
        secretKey: "12345678"
        whiteRemoteAddress: 192.168.0.*
        admin: false
        defaultTopicPerm: DENY
        defaultGroupPerm: SUB
        topicPerms: [topicA=DENY, topicB=PUB|SUB]
        groupPerms: [groupA=DENY, groupB=SUB]

A file RocketMQ would misread is refused here with the field and the rule (:class:`AclConfigError`): keys shorter
than 7 characters (RocketMQ refuses those too, and exits), an unknown permission spelling (RocketMQ silently reads it
as DENY), an address pattern it refuses or matches loosely, a key named twice (RocketMQ keeps the first).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from reference.net.remoting.acl.addresses import NOTHING, AddressPattern, parse_pattern
from reference.net.remoting.acl.permission import Perm, parse_perm

#: RocketMQ refuses an accessKey or secretKey shorter than this (``PlainPermissionManager``: length <= 6 is an error).
MIN_KEY_LENGTH = 7
#: An account's defaults when the file says nothing (RocketMQ's PlainAccessResource: DENY for topics and groups).
DEFAULT_TOPIC_PERM = Perm.DENY
DEFAULT_GROUP_PERM = Perm.DENY


class AclConfigError(ValueError):
    """The file breaks a rule; the message names the field (``accounts[1].topicPerms[0]``) and the rule."""


@dataclass(frozen=True)
class Account:
    access_key: str
    secret_key: str
    white_address: AddressPattern = NOTHING
    admin: bool = False
    default_topic_perm: Perm = DEFAULT_TOPIC_PERM
    default_group_perm: Perm = DEFAULT_GROUP_PERM
    topic_perms: dict[str, Perm] = field(default_factory=dict)
    group_perms: dict[str, Perm] = field(default_factory=dict)


@dataclass(frozen=True)
class AclConfig:
    accounts: dict[str, Account]
    global_white_addresses: tuple[AddressPattern, ...] = ()


def _text(value: Any, where: str, *, required: bool = False) -> str:
    if value is None and not required:
        return ""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise AclConfigError(f"{where}: must be a string")
    return str(value)


def _perms(value: Any, where: str) -> dict[str, Perm]:
    if value is None:
        return {}
    if not isinstance(value, list):
        raise AclConfigError(f"{where}: must be a list of NAME=PERM")
    perms: dict[str, Perm] = {}
    for i, item in enumerate(value):
        name, sep, perm = _text(item, f"{where}[{i}]").partition("=")
        if not sep or not name.strip():
            raise AclConfigError(f"{where}[{i}]: must be NAME=PERM, got {item!r}")
        try:
            perms[name.strip()] = parse_perm(perm)
        except ValueError as exc:
            raise AclConfigError(f"{where}[{i}]: the permission {exc}") from None
    return perms


def _perm(value: Any, where: str, default: Perm) -> Perm:
    if value is None:
        return default
    try:
        return parse_perm(_text(value, where))
    except ValueError as exc:
        raise AclConfigError(f"{where}: {exc}") from None


def _pattern(value: Any, where: str) -> AddressPattern:
    try:
        return parse_pattern(_text(value, where))
    except ValueError as exc:
        raise AclConfigError(f"{where}: {exc}") from None


def _account(doc: Any, where: str) -> Account:
    if not isinstance(doc, dict):
        raise AclConfigError(f"{where}: must be a mapping")
    keys = {}
    for name in ("accessKey", "secretKey"):
        keys[name] = _text(doc.get(name), f"{where}.{name}", required=True)
        if len(keys[name]) < MIN_KEY_LENGTH:
            raise AclConfigError(f"{where}.{name}: must be at least {MIN_KEY_LENGTH} characters")
    admin = doc.get("admin", False)
    if not isinstance(admin, bool):
        raise AclConfigError(f"{where}.admin: must be true or false")
    return Account(
        keys["accessKey"], keys["secretKey"], _pattern(doc.get("whiteRemoteAddress"), f"{where}.whiteRemoteAddress"),
        admin, _perm(doc.get("defaultTopicPerm"), f"{where}.defaultTopicPerm", DEFAULT_TOPIC_PERM),
        _perm(doc.get("defaultGroupPerm"), f"{where}.defaultGroupPerm", DEFAULT_GROUP_PERM),
        _perms(doc.get("topicPerms"), f"{where}.topicPerms"), _perms(doc.get("groupPerms"), f"{where}.groupPerms"),
    )


def parse_acl(doc: Any) -> AclConfig:
    """The configuration a parsed yml document holds; AclConfigError naming the field that breaks a rule."""
    if not isinstance(doc, dict):
        raise AclConfigError("the file must hold a mapping with 'accounts'")
    accounts: dict[str, Account] = {}
    raw_accounts = doc.get("accounts")
    raw_accounts = [] if raw_accounts is None else raw_accounts
    if not isinstance(raw_accounts, list):
        raise AclConfigError("accounts: must be a list")
    for i, raw in enumerate(raw_accounts):
        account = _account(raw, f"accounts[{i}]")
        if account.access_key in accounts:
            raise AclConfigError(f"accounts[{i}].accessKey: {account.access_key!r} is named twice")
        accounts[account.access_key] = account
    white = doc.get("globalWhiteRemoteAddresses")
    white = [] if white is None else white
    if not isinstance(white, list):
        raise AclConfigError("globalWhiteRemoteAddresses: must be a list")
    patterns = tuple(_pattern(p, f"globalWhiteRemoteAddresses[{i}]") for i, p in enumerate(white))
    return AclConfig(accounts, patterns)


def load_acl(path: Path) -> AclConfig:
    """Read ``path``; AclConfigError (naming the file) when it cannot be read or breaks a rule."""
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise AclConfigError(f"{path}: {exc.strerror or exc}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise AclConfigError(f"{path}: not YAML: {str(exc).splitlines()[0]}") from None
    try:
        return parse_acl(doc)
    except AclConfigError as exc:
        raise AclConfigError(f"{path}: {exc}") from None
