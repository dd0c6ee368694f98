"""ACL 1.0 permissions: the bits an account holds on a topic or a group, and when they allow a request.

RocketMQ's ``Permission``: DENY, ANY, PUB and SUB are bits; a yml value is one of ``DENY``, ``PUB``, ``SUB``,
``PUB|SUB`` or ``SUB|PUB``, case-sensitive (4.9.7 reads anything else, ``ANY`` and ``pub`` included, as DENY).
A held DENY refuses everything; a needed ANY is met by PUB or SUB; otherwise the needed bit must be held.
"""

from __future__ import annotations

import enum

from reference.net.remoting.command import RequestCode


class Perm(enum.IntFlag):
    """RocketMQ's Permission bits (the values are the wire's and the Java class's)."""

    DENY = 1
    ANY = 1 << 1
    PUB = 1 << 2
    SUB = 1 << 3


#: The yml spellings RocketMQ's ``Permission.parsePermFromString`` knows (ANY is a needed permission only).
PERM_NAMES: dict[str, Perm] = {
    "DENY": Perm.DENY, "PUB": Perm.PUB, "SUB": Perm.SUB, "PUB|SUB": Perm.PUB | Perm.SUB, "SUB|PUB": Perm.PUB | Perm.SUB,
}

#: Request codes only an admin account may send (RocketMQ's ``Permission.ADMIN_CODE``): create or update a topic,
#: update the broker's config, delete a topic, create or update or delete a subscription group.
ADMIN_CODES = frozenset({
    RequestCode.UPDATE_AND_CREATE_TOPIC, RequestCode.UPDATE_BROKER_CONFIG,
    RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, RequestCode.DELETE_SUBSCRIPTIONGROUP,
    RequestCode.DELETE_TOPIC_IN_BROKER,
})


def parse_perm(text: str) -> Perm:
    """A yml permission; ValueError for a spelling RocketMQ does not know (it reads those as DENY, silently: a
    configuration that says ``ANY`` or ``pub`` then denies all, which a reference should say, not do)."""
    perm = PERM_NAMES.get(text.strip())
    if perm is None:
        raise ValueError(f"must be one of {', '.join(PERM_NAMES)} (RocketMQ reads any other as DENY), got {text!r}")
    return perm


def allows(needed: Perm, owned: Perm) -> bool:
    """Whether an account holding ``owned`` may do what needs ``needed`` (``Permission.checkPermission``)."""
    if owned & Perm.DENY:
        return False
    if needed & Perm.ANY:
        return bool(owned & (Perm.PUB | Perm.SUB))
    return bool(needed & owned)
