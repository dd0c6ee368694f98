"""The ACL 1.0 request signature: HMAC-SHA1 over a request's header values in key order, then its body.

Both ends compute the same bytes. The client (Java ``AclClientRPCHook``, the C++ client's ``ClientRPCHook``)
puts its AccessKey (and SecurityToken, OnsChannel when it has them) beside the header fields, signs the values
of all of them in the order of their names followed by the body, and adds the Base64 of the HMAC-SHA1 as the
``Signature`` field. The broker (``PlainAccessResource.parse``) takes every extFields value but the signature
itself, in the same order, and recomputes it with the secret key of the account the AccessKey names.

Only the values are signed, not their names; the order is Java's ``TreeMap`` order of the names (UTF-16 code
units, which equals Python's code-point order for the ASCII names RocketMQ uses).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass

#: The extFields names RocketMQ's SessionCredentials adds to a signed request.
ACCESS_KEY = "AccessKey"
SIGNATURE = "Signature"
SECURITY_TOKEN = "SecurityToken"
#: Never part of the signed content on the broker (RocketMQ's MixAll.UNIQUE_MSG_QUERY_FLAG): an admin tool
#: adds it to a QUERY_MESSAGE after signing.
UNIQUE_MSG_QUERY_FLAG = "_UNIQUE_KEY_QUERY"
#: Header fields left out of what the broker verifies.
UNSIGNED_FIELDS = frozenset({SIGNATURE, UNIQUE_MSG_QUERY_FLAG})


@dataclass(frozen=True)
class SessionCredentials:
    """An account's keys, as a client holds them."""

    access_key: str
    secret_key: str
    security_token: str | None = None


def signed_content(ext_fields: Mapping[str, str], body: bytes) -> bytes:
    """What is signed: the values of ``ext_fields`` (the signature and the unsigned flag left out) in the order of
    their names, UTF-8, followed by the body."""
    values = "".join(value for name, value in sorted(ext_fields.items()) if name not in UNSIGNED_FIELDS)
    return values.encode("utf-8") + body


def signature(content: bytes, secret_key: str) -> str:
    """Base64 (standard alphabet, padded) of HMAC-SHA1(secret key, content), as RocketMQ's AclSigner writes it."""
    digest = hmac.new(secret_key.encode("utf-8"), content, hashlib.sha1).digest()
    return base64.b64encode(digest).decode("ascii")


def sign_fields(ext_fields: Mapping[str, str], body: bytes, credentials: SessionCredentials) -> dict[str, str]:
    """``ext_fields`` with the credentials' AccessKey (and SecurityToken) and the signature over them added: what a
    signing client sends."""
    fields = dict(ext_fields)
    fields[ACCESS_KEY] = credentials.access_key
    if credentials.security_token is not None:
        fields[SECURITY_TOKEN] = credentials.security_token
    fields[SIGNATURE] = signature(signed_content(fields, body), credentials.secret_key)
    return fields


def signature_matches(ext_fields: Mapping[str, str], body: bytes, secret_key: str) -> bool:
    """Whether the request's ``Signature`` is the one its content and ``secret_key`` give (compared in constant
    time: the comparison must not tell an attacker how much of a guess was right)."""
    claimed = ext_fields.get(SIGNATURE)
    if claimed is None:
        return False
    expected = signature(signed_content(ext_fields, body), secret_key)
    return hmac.compare_digest(expected.encode("ascii"), claimed.encode("utf-8", "replace"))
