"""The broker's ACL 1.0 check, run before every request on the broker port (RocketMQ registers it as an RPC hook).

In RocketMQ's order (``PlainPermissionManager.validate``):

0. the resources the request needs are read (an unreadable request is refused whoever sends it);
1. a client from a globally white-listed address is let through;
2. a request without an AccessKey, or naming none of the accounts, is refused;
3. a client from its account's white-listed address is let through;
4. a signature that is not the HMAC-SHA1 of the request under the account's secret is refused;
5. a request needing only PUB on the trace topic is let through;
6. an admin-only request from an account that is not admin is refused; an admin without permission lists is let
   through;
7. every topic and group the request touches must allow what it needs, by the account's own entry for it or else
   its default for topics or groups, checked in the order RocketMQ's HashMap iterates them (so that a refusal
   names the resource RocketMQ's names).

A refusal is :class:`AccessDenied`; the transport answers it with RocketMQ's code and the reason, and nothing of
the request is done. The reason names the account and the resource, never a secret or a stored message.
"""

from __future__ import annotations

from reference.net.remoting.acl.config import Account, AclConfig
from reference.net.remoting.acl.java_order import hashmap_order
from reference.net.remoting.acl.permission import ADMIN_CODES, Perm, allows
from reference.net.remoting.acl.resources import (
    TRACE_TOPIC,
    UnreadableRequest,
    describe,
    group_of,
    is_group_resource,
    needed_permissions,
)
from reference.net.remoting.acl.signature import ACCESS_KEY, signature_matches
from reference.net.remoting.command import RemotingCommand
from reference.rules.codes import ResponseCode


class AccessDenied(Exception):
    """A request the ACL refuses; ``kind`` says which check (for counting and tests), the message why."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


#: The response code of a refusal. RocketMQ 4.9 throws AclException from its RPC hook, which the remoting layer
#: answers as any exception a request raised: SYSTEM_ERROR with the exception's description as the remark.
ACL_REFUSAL = ResponseCode.SYSTEM_ERROR

#: The kinds of refusal, one per check.
NO_ACCESS_KEY = "no-access-key"
UNKNOWN_ACCESS_KEY = "unknown-access-key"
BAD_SIGNATURE = "bad-signature"
NOT_ADMIN = "not-admin"
NO_PERMISSION = "no-permission"
UNREADABLE = "unreadable"


class AccessValidator:
    def __init__(self, config: AclConfig) -> None:
        self.config = config
        #: Refusals so far, by kind.
        self.refused: dict[str, int] = {}

    def check(self, remote_ip: str, cmd: RemotingCommand) -> None:
        """Let ``cmd`` from ``remote_ip`` through, or raise AccessDenied (and count it)."""
        try:
            self._check(remote_ip, cmd)
        except AccessDenied as exc:
            self.refused[exc.kind] = self.refused.get(exc.kind, 0) + 1
            raise

    def _check(self, remote_ip: str, cmd: RemotingCommand) -> None:
        # RocketMQ reads the resources first, so an unreadable request is refused even from a white-listed address;
        # a request without any header field is not read at all.
        try:
            needed = needed_permissions(cmd) if cmd.ext_fields else {}
        except UnreadableRequest as exc:
            raise AccessDenied(UNREADABLE, str(exc)) from None
        if any(pattern.matches(remote_ip) for pattern in self.config.global_white_addresses):
            return
        access_key = cmd.ext_fields.get(ACCESS_KEY)
        if access_key is None:
            raise AccessDenied(NO_ACCESS_KEY, "No accessKey is configured")
        account = self.config.accounts.get(access_key)
        if account is None:
            raise AccessDenied(UNKNOWN_ACCESS_KEY, f"No acl config for {access_key}")
        if account.white_address.matches(remote_ip):
            return
        if not signature_matches(cmd.ext_fields, cmd.body, account.secret_key):
            raise AccessDenied(BAD_SIGNATURE, f"Check signature failed for accessKey={access_key}")
        if needed.get(TRACE_TOPIC) == Perm.PUB:
            return
        if cmd.code in ADMIN_CODES and not account.admin:
            raise AccessDenied(NOT_ADMIN, f"Need admin permission for request code={cmd.code}, but "
                                          f"accessKey={access_key} is not")
        if account.admin and not account.topic_perms and not account.group_perms:
            return  # an admin without permission lists may do anything (RocketMQ: its owned map is null)
        for resource in hashmap_order(needed):
            if not allows(needed[resource], owned_permission(account, resource)):
                raise AccessDenied(NO_PERMISSION, f"No default permission for {describe(resource)}")


def owned_permission(account: Account, resource: str) -> Perm:
    """What ``account`` holds on ``resource``: its own entry, else its default for groups or topics."""
    if is_group_resource(resource):
        return account.group_perms.get(group_of(resource), account.default_group_perm)
    return account.topic_perms.get(resource, account.default_topic_perm)
