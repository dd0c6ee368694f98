"""mqadmin's daily commands against a RocketMQ name server, each judged OK, REFUSED (clearly) or WRONG.

The 31 commands are what a user of a RocketMQ 4.9 cluster types on an ordinary day: cluster and topic
overview, topic and group administration, consumer lag and connections, offsets reset, message lookup by id,
key and unique key, and the send/print tools. :func:`run_daily` sets up the state they read (a topic with
keyed messages, a consumer group with a live member and a committed offset, a producer group), runs each one
through :class:`~conformance.peers.mqadmin.MqAdmin` and judges what it printed:

* **OK**: the command printed what it exists to show (``expect``), and, where it changes something, the
  change is visible afterwards (``verify``);
* **REFUSED**: the command failed with a RocketMQ response code and a remark naming what is missing
  (``CODE: N  DESC: …``), and changed nothing;
* **WRONG**: anything else: success without the expected answer, a change that did not happen, a bare
  "request code N not supported", or a failure without a code (a Java exception from a malformed answer).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from conformance.peers.mqadmin import AdminRun, MqAdmin

OK, REFUSED, WRONG = "OK", "REFUSED", "WRONG"
_REFUSAL = re.compile(r"CODE: (?P<code>-?\d+)\s+DESC: (?P<desc>[^\n]*)")
#: A Java exception's class and message, the first one printed (what a WRONG without a response code shows).
_EXCEPTION = re.compile(r"(?m)^(?:Caused by: )?([\w.]+(?:Exception|Error)\b[^\n]*)")
#: The client gave up waiting, which says nothing of the answer: on a loaded machine a JVM's 3 s request timeout
#: passes while the server is starved of CPU, so such a run is repeated (up to TIMEOUT_TRIES runs in all).
_TIMED_OUT = re.compile(r"RemotingTimeoutException|RemotingTooMuchRequestException")
TIMEOUT_TRIES = 3
#: A refusal that only says the request is not served: the command does not work and says nothing useful.
_UNSUPPORTED = re.compile(r"request code \d+ not supported")


@dataclass(frozen=True)
class Verdict:
    command: str
    verdict: str
    why: str


@dataclass
class Scene:
    """The names the commands are run with (a run's own, so runs do not see each other's state)."""

    broker_addr: str
    broker_name: str
    cluster: str
    topic: str
    group: str
    producer_group: str
    key: str
    unique_key: str = ""
    offset_msg_id: str = ""


Check = Callable[[MqAdmin, Scene], str | None]


@dataclass(frozen=True)
class Daily:
    """One daily command: its arguments (``str.format``-ed with the scene), the regex its output must match to be
    OK, an optional check after it (None: the change is there; a string: what is missing), and whether a
    refusal can be right (not when the scene holds what the command looks up)."""

    name: str
    args: tuple[str, ...]
    expect: str
    verify: Check | None = None
    #: False when what the command asks for exists (the message it looks up was sent): a refusal is then wrong.
    refusable: bool = True


def _route_perm(admin: MqAdmin, scene: Scene, topic: str) -> int | None:
    found = re.search(r'"perm":(\d+)', admin.run("topicRoute", "-t", topic).stdout)
    return int(found[1]) if found else None


def _perm_became_read_only(admin: MqAdmin, scene: Scene) -> str | None:
    perm = _route_perm(admin, scene, scene.topic + "_perm")
    return None if perm == 4 else f"topicRoute still shows perm {perm} after updateTopicPerm -p 4"


def _topic_gone(admin: MqAdmin, scene: Scene) -> str | None:
    listed = admin.run("topicList").stdout.split()
    return f"{scene.topic}_del is still listed after deleteTopic" if scene.topic + "_del" in listed else None


def _topic_created(admin: MqAdmin, scene: Scene) -> str | None:
    listed = admin.run("topicList").stdout.split()
    return None if scene.topic + "_new" in listed else f"{scene.topic}_new is not listed after updateTopic"


def _offsets_reset(admin: MqAdmin, scene: Scene) -> str | None:
    """After resetOffsetByTime to the future, every queue's consumer offset is its max (no lag)."""
    out = admin.run("consumerProgress", "-g", scene.group).stdout
    rows = [line.split() for line in out.splitlines() if line.startswith(scene.topic + " ")]
    if not rows:
        return "consumerProgress shows no queue of the topic after resetOffsetByTime"
    lagging = [r for r in rows if len(r) >= 5 and r[3] != r[4]]
    return f"queues still behind after the reset: {lagging}" if lagging else None


DAILY: tuple[Daily, ...] = (
    Daily("clusterList", (), r"{cluster}\s+{broker_name}"),
    Daily("topicList", (), r"(?m)^{topic}$"),
    Daily("updateTopic", ("-c", "{cluster}", "-t", "{topic}_new", "-r", "4", "-w", "4"), r"success", _topic_created),
    Daily("topicRoute", ("-t", "{topic}",), r'"perm":\d'),
    Daily("topicStatus", ("-t", "{topic}",), r"{broker_name}\s+\d+\s+\d+\s+[1-9]"),
    Daily("topicClusterList", ("-t", "{topic}",), r"{cluster}"),
    Daily("updateTopicPerm", ("-c", "{cluster}", "-t", "{topic}_perm", "-p", "4"), r"success",
          _perm_became_read_only),
    Daily("deleteTopic", ("-c", "{cluster}", "-t", "{topic}_del"), r"success", _topic_gone),
    Daily("getBrokerConfig", ("-b", "{broker_addr}",), r"brokerName\s*=\s*{broker_name}"),
    Daily("updateBrokerConfig", ("-b", "{broker_addr}", "-k", "maxMessageSize", "-v", "65536"), r"success"),
    Daily("brokerStatus", ("-b", "{broker_addr}",), r"msgPutTotalTodayNow\s*:\s*\d"),
    Daily("getNamesrvConfig", (), r"\S+\s*=\s*\S+"),
    Daily("updateSubGroup", ("-b", "{broker_addr}", "-g", "{group}_sub", "-r", "3"), r"success"),
    Daily("deleteSubGroup", ("-b", "{broker_addr}", "-g", "{group}_sub"), r"success"),
    Daily("consumerProgress", ("-g", "{group}",), r"{topic}\s+{broker_name}\s+\d+\s+\d+\s+\d+"),
    Daily("consumerConnection", ("-g", "{group}",), r"{group}_client"),
    Daily("producerConnection", ("-g", "{producer_group}", "-t", "{topic}"), r"{group}_client"),
    Daily("consumerStatus", ("-g", "{group}",), r"{group}_client"),
    Daily("resetOffsetByTime", ("-g", "{group}", "-t", "{topic}", "-s", "4102444800000"),
          r"{broker_name}\s+\d+\s+\d+", _offsets_reset),
    Daily("brokerConsumeStats", ("-b", "{broker_addr}",), r"{topic}\s+{group}\s+{broker_name}"),
    Daily("statsAll", ("-t", "{topic}",), r"{topic}\s+\S+"),
    Daily("queryMsgById", ("-i", "{offset_msg_id}",), r"Topic:\s+{topic}", refusable=False),
    Daily("queryMsgByKey", ("-t", "{topic}", "-k", "{key}"), r"(?m)^\S+\s+\d+\s+\d+$", refusable=False),
    Daily("queryMsgByUniqueKey", ("-t", "{topic}", "-i", "{unique_key}"), r"Topic:\s+{topic}", refusable=False),
    Daily("queryMsgByOffset", ("-t", "{topic}", "-b", "{broker_name}", "-i", "0", "-o", "0"), r"Topic:\s+{topic}"),
    Daily("printMsg", ("-t", "{topic}",), r"MessageExt \[brokerName="),
    Daily("printMsgByQueue", ("-t", "{topic}", "-a", "{broker_name}", "-i", "0", "-p", "true"),
          r"MessageExt \[brokerName="),
    Daily("sendMessage", ("-t", "{topic}", "-p", "hello", "-k", "{key}_2"), r"SEND_OK"),
    Daily("consumeMessage", ("-t", "{topic}",), r"MessageExt \[brokerName="),
    Daily("allocateMQ", ("-t", "{topic}", "-i", "10.0.0.1@a,10.0.0.2@b"), r'"10.0.0.1@a"'),
    Daily("checkMsgSendRT", ("-t", "{topic}", "-a", "3", "-s", "64"), r"(?m)^#Broker Name"),
)


def judge(daily: Daily, run: AdminRun, scene: Scene, after: str | None) -> Verdict:
    """OK, REFUSED or WRONG for one run of ``daily`` (``after``: what its verify found missing, if anything)."""
    fields = {k: re.escape(str(v)) for k, v in vars(scene).items()}
    refused = _REFUSAL.search(run.output)
    if refused is not None:
        desc = refused["desc"].strip()
        if _UNSUPPORTED.search(desc):
            return Verdict(daily.name, WRONG, f"not served: CODE {refused['code']} {desc}")
        if not daily.refusable:
            return Verdict(daily.name, WRONG, f"refused what exists: CODE {refused['code']} {desc}")
        return Verdict(daily.name, REFUSED, f"CODE {refused['code']}: {desc}")
    if not re.search(daily.expect.format(**fields), run.stdout):
        exceptions = _EXCEPTION.findall(run.output)
        shown = exceptions[-1] if exceptions else " | ".join(run.output.strip().splitlines()[-3:])
        return Verdict(daily.name, WRONG, f"no {daily.expect!r} in its output: {shown[:300]}")
    if after is not None:
        return Verdict(daily.name, WRONG, f"printed success, but {after}")
    return Verdict(daily.name, OK, "")


def run_patiently(admin: MqAdmin, command: str, *args: str) -> AdminRun:
    """``admin.run``, repeated while the client only timed out (at most TIMEOUT_TRIES runs)."""
    run = admin.run(command, *args)
    for _retry in range(TIMEOUT_TRIES - 1):
        if not _TIMED_OUT.search(run.output):
            break
        run = admin.run(command, *args)
    return run


def run_daily(admin: MqAdmin, scene: Scene, prepare: Callable[[MqAdmin, Scene], Any] | None = None,
              only: tuple[str, ...] = ()) -> list[Verdict]:
    """Every daily command (or ``only`` those) against ``admin``'s name server, in the table's order."""
    if prepare is not None:
        prepare(admin, scene)
    verdicts = []
    for daily in DAILY:
        if only and daily.name not in only:
            continue
        args = tuple(a.format(**vars(scene)) for a in daily.args)
        run = run_patiently(admin, daily.name, *args)
        checked = daily.verify is not None and not _REFUSAL.search(run.output)
        after = daily.verify(admin, scene) if checked and daily.verify is not None else None
        verdicts.append(judge(daily, run, scene, after))
    return verdicts


def prepare_topic(admin: MqAdmin, scene: Scene) -> None:
    """The topics the commands read and change, and two keyed messages (their ids fill the scene)."""
    for suffix in ("", "_perm", "_del"):
        topic = scene.topic + suffix
        admin.run("updateTopic", "-b", scene.broker_addr, "-t", topic, "-r", "4", "-w", "4")
    sent = run_patiently(admin, "sendMessage", "-t", scene.topic, "-p", "daily", "-k", scene.key,
                         "-b", scene.broker_name, "-i", "0")
    # SendMessageCommand prints: Broker Name  #QID  #Send Result  #MsgId
    found = re.search(r"SEND_OK\s+(\S+)", sent.stdout)
    if found is None:
        raise RuntimeError(f"mqadmin sendMessage failed while preparing: {sent.output[-500:]}")
    scene.unique_key = found[1]
    time.sleep(0.1)
