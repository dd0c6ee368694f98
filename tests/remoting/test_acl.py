"""The parts of ACL 1.0 (``reference.net.remoting.acl``) on their own: the signature against a vector RocketMQ's own
classes computed, the permission bits, the white-list patterns RocketMQ 4.9.7 reads, Java's HashMap order that
decides which denied resource a refusal names, and the order of the checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reference.net.remoting.acl.addresses import parse_pattern
from reference.net.remoting.acl.config import AclConfigError, parse_acl
from reference.net.remoting.acl.java_order import hashmap_order, string_hash
from reference.net.remoting.acl.permission import Perm, allows, parse_perm
from reference.net.remoting.acl.signature import SessionCredentials, sign_fields, signature, signed_content
from reference.net.remoting.acl.validator import AccessDenied, AccessValidator
from reference.net.remoting.command import RemotingCommand, RequestCode

VECTORS = Path(__file__).resolve().parents[2] / "fixtures" / "acl" / "signatures.json"


@pytest.mark.req("ACL-1")
def test_signatures_equal_rocketmqs_own() -> None:
    for vector in json.loads(VECTORS.read_text())["vectors"]:
        content = signed_content(vector["ext_fields"], vector["body"].encode())
        assert signature(content, vector["secret_key"]) == vector["signature"]


def test_a_signing_client_adds_its_key_and_signs_everything_but_the_signature() -> None:
    fields = sign_fields({"topic": "T", "queueId": "0"}, b"x", SessionCredentials("Account1", "Secret12", "tok"))
    assert fields["AccessKey"] == "Account1" and fields["SecurityToken"] == "tok"
    # Names in order: AccessKey, SecurityToken, queueId, topic (upper case before lower, as Java's TreeMap).
    assert fields["Signature"] == signature(b"Account1" + b"tok" + b"0" + b"T" + b"x", "Secret12")


@pytest.mark.req("ACL-2")
def test_permission_bits_are_rocketmqs() -> None:
    assert (Perm.DENY, Perm.ANY, Perm.PUB, Perm.SUB) == (1, 2, 4, 8)
    assert parse_perm(" PUB|SUB ") == parse_perm("SUB|PUB") == Perm.PUB | Perm.SUB
    for unknown in ("ANY", "pub", "PUB | SUB", "READ"):
        with pytest.raises(ValueError, match="RocketMQ reads any other as DENY"):
            parse_perm(unknown)
    assert allows(Perm.PUB, Perm.PUB | Perm.SUB) and not allows(Perm.PUB, Perm.SUB)
    assert not allows(Perm.SUB, Perm.DENY | Perm.SUB), "a held DENY refuses everything"
    assert allows(Perm.ANY, Perm.SUB) and not allows(Perm.ANY, Perm.DENY)


@pytest.mark.req("ACL-6")
@pytest.mark.parametrize(("pattern", "matching", "not_matching"), [
    ("*", ["10.1.2.3", "127.0.0.1"], []),
    ("*.*.*.*", ["8.8.8.8"], []),
    ("", [], ["127.0.0.1"]),
    ("127.0.0.1", ["127.0.0.1"], ["127.0.0.2"]),
    ("192.168.1.*", ["192.168.1.0", "192.168.1.255"], ["192.168.2.1"]),
    ("192.168.1.1-100", ["192.168.1.50", "192.168.1.1"], ["192.168.1.200", "192.168.1.0"]),
    ("192.168.1-3.*", ["192.168.2.1"], ["192.168.4.1"]),
    ("192.168.*.*", ["192.168.7.9"], ["192.169.0.1"]),
    ("192.168.1.{1,2}", ["192.168.1.1", "192.168.1.2"], ["192.168.1.3"]),
    ("10.0.0.1,10.0.0.2", ["10.0.0.2"], ["10.0.0.3"]),
])
def test_white_list_patterns_match_as_rocketmq_4_9_7s(pattern: str, matching: list[str],
                                                       not_matching: list[str]) -> None:
    parsed = parse_pattern(pattern)
    assert all(parsed.matches(a) for a in matching) and not any(parsed.matches(a) for a in not_matching)


@pytest.mark.parametrize(("pattern", "says"), [
    ("10.*", "four segments"),
    ("192.*.1.*", "must be '*'"),
    ("192.168.{1,2}.*", "not an IPv4 address"),
    ("192.168.1.300", "not an IPv4 address"),
    ("192.168.1.5-3", "must be a-b"),
    ("::1", "only IPv4"),
])
def test_patterns_rocketmq_refuses_or_reads_loosely_are_refused(pattern: str, says: str) -> None:
    with pytest.raises(ValueError, match=says.replace("*", r"\*").replace("(", r"\(")):
        parse_pattern(pattern)


def test_java_string_hash_and_hashmap_order() -> None:
    assert string_hash("hello") == 99162322 and string_hash("polygenelubricants") == -2**31
    assert hashmap_order(["%RETRY%groupA", "topicA"]) == ["topicA", "%RETRY%groupA"]
    assert hashmap_order(["TopicTest", "%RETRY%please_rename_unique_group_name_4"]) == [
        "%RETRY%please_rename_unique_group_name_4", "TopicTest"]
    many = [f"topic{i}" for i in range(40)]
    assert sorted(hashmap_order(many)) == sorted(many), "a resize keeps every key"


def _validator(**account: object) -> AccessValidator:
    return AccessValidator(parse_acl({"globalWhiteRemoteAddresses": ["10.9.9.*"], "accounts": [
        {"accessKey": "Account1", "secretKey": "Secret12", "defaultTopicPerm": "DENY", "defaultGroupPerm": "SUB",
         **account}]}))


def _signed(code: int, fields: dict[str, str], body: bytes = b"", secret: str = "Secret12") -> RemotingCommand:
    return RemotingCommand(code, ext_fields=sign_fields(fields, body, SessionCredentials("Account1", secret)),
                           body=body)


@pytest.mark.req("ACL-1", "ACL-3", "ACL-6")
def test_the_checks_run_in_rocketmqs_order() -> None:
    validator = _validator(admin=False)
    send = {"topic": "T", "queueId": "0"}
    with pytest.raises(AccessDenied, match="No default permission for topic:T"):
        validator.check("127.0.0.1", _signed(RequestCode.SEND_MESSAGE, send))
    validator.check("10.9.9.7", RemotingCommand(RequestCode.SEND_MESSAGE, ext_fields=send))  # global white list
    with pytest.raises(AccessDenied, match="AclException|heartbeat body"):  # read first, even when white-listed
        validator.check("10.9.9.7", RemotingCommand(RequestCode.HEART_BEAT, ext_fields={"x": "1"}, body=b"{"))
    with pytest.raises(AccessDenied, match="Check signature failed"):  # the signature before the admin check
        validator.check("127.0.0.1", _signed(17, {"topic": "T"}, secret="wrong-one"))
    with pytest.raises(AccessDenied, match="Need admin permission for request code=17"):
        validator.check("127.0.0.1", _signed(17, {"topic": "T"}))
    trace = {"topic": "RMQ_SYS_TRACE_TOPIC", "queueId": "0"}
    validator.check("127.0.0.1", _signed(RequestCode.SEND_MESSAGE, trace))  # the trace topic needs nothing
    assert validator.refused == {"no-permission": 1, "unreadable": 1, "bad-signature": 1, "not-admin": 1}
    _validator(admin=True).check("127.0.0.1", _signed(RequestCode.SEND_MESSAGE, send))  # admin without lists


def test_account_white_list_skips_signature_and_permissions() -> None:
    validator = _validator(whiteRemoteAddress="127.0.0.1")
    validator.check("127.0.0.1", RemotingCommand(RequestCode.SEND_MESSAGE,
                                                 ext_fields={"topic": "T", "AccessKey": "Account1"}))
    with pytest.raises(AccessDenied, match="Check signature failed"):
        validator.check("127.0.0.2", RemotingCommand(RequestCode.SEND_MESSAGE,
                                                     ext_fields={"topic": "T", "AccessKey": "Account1"}))


@pytest.mark.parametrize(("doc", "says"), [
    ([], "must hold a mapping"),
    ({"accounts": [{"accessKey": "Account1"}]}, "accounts[0].secretKey: must be a string"),
    ({"accounts": [{"accessKey": "short", "secretKey": "Secret12"}]}, "accounts[0].accessKey: must be at least 7"),
    ({"accounts": [{"accessKey": "Account1", "secretKey": "Secret12", "admin": "yes"}]}, "admin: must be true"),
    ({"accounts": [{"accessKey": "Account1", "secretKey": "Secret12", "topicPerms": ["T"]}]}, "must be NAME=PERM"),
    ({"accounts": {}}, "accounts: must be a list"),
])
def test_a_bad_configuration_names_the_field(doc: object, says: str) -> None:
    with pytest.raises(AclConfigError, match=says.replace("[", r"\[").replace("]", r"\]")):
        parse_acl(doc)
