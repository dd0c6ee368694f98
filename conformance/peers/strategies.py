"""The Java client's six allocation strategies, live: ``mqtck gate java-strategies-4.9.8``.

Apache RocketMQ's own classes (``rocketmq-client`` from Maven Central) run behind the exec protocol in the
project's ``java_strategies/StrategyDriver.java``, one JVM per strategy. For each strategy the gate

1. replays its golden vectors (``fixtures/allocation/golden``, made with Apache RocketMQ's classes of 5.3.3+)
   and requires the same queues in the same order, or the same exception text;
2. runs ``mqtck strategy check``'s properties with the promises of the matching built-in (``averagely`` ...);

and, as a control, checks ``BrokenAveragely`` (Averagely with a partition fault, in the same driver) and
requires the properties to catch it. Exit 0 when all six pass both and the control is caught, 1 otherwise.
"""

from __future__ import annotations

import os
import shlex
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.peers import PeerError
from conformance.peers.java import java_program
from conformance.report.junit import JUnitCase, testsuite_xml
from conformance.strategy.declaration import BUILTIN_DECLARATIONS
from conformance.strategy.engine import CheckSettings, run_check
from conformance.strategy.execproc import ExecStrategyUnderTest
from conformance.strategy.golden import as_request, golden_lines, protocol_answer

DRIVER = Path(__file__).resolve().parent / "java_strategies" / "StrategyDriver.java"
#: Java class -> the built-in whose promises and golden file apply to it.
JAVA_STRATEGIES = {
    "AllocateMessageQueueAveragely": "averagely",
    "AllocateMessageQueueAveragelyByCircle": "by_circle",
    "AllocateMessageQueueConsistentHash": "consistent_hash",
    "AllocateMessageQueueByConfig": "by_config",
    "AllocateMessageQueueByMachineRoom": "machine_room",
    "AllocateMachineRoomNearby": "machine_room_nearby",
}
#: The control: Averagely that keeps back the last consumer's last queue; its promises are Averagely's.
CONTROL = ("BrokenAveragely", "averagely")
#: Examples per property (the CLI's default is 200; the JVM answers in microseconds, so more is cheap).
DEFAULT_EXAMPLES = 200
#: The exec protocol's wait per answer: the first includes the JVM compiling the driver (about 1 s).
ANSWER_TIMEOUT_S = 60.0


@dataclass
class StrategyVerdict:
    java_class: str
    builtin: str
    golden_lines: int = 0
    golden_mismatches: list[str] = field(default_factory=list)
    properties: dict[str, str] = field(default_factory=dict)
    exit_code: int = 0

    @property
    def passed(self) -> bool:
        return not self.golden_mismatches and self.exit_code == 0

    def to_json(self) -> dict[str, Any]:
        return {"class": self.java_class, "builtin": self.builtin, "golden_lines": self.golden_lines,
                "golden_mismatches": len(self.golden_mismatches), "first_mismatches": self.golden_mismatches[:3],
                "properties": self.properties, "passed": self.passed}


def driver(classpath: list[str], java_class: str, log_dir: Path) -> ExecStrategyUnderTest:
    """The exec-protocol strategy: ``java`` running the driver on the client's classpath."""
    java = shutil.which("java")
    if java is None:
        raise PeerError("java not found on PATH (the Java client's strategies run on it)")
    # The client logs to ~/logs by default; keep its files with this run.
    program = java_program(DRIVER, classpath, "the strategy driver")
    argv = [java, f"-Drocketmq.client.logRoot={log_dir}", *program, java_class]
    return ExecStrategyUnderTest(argv, timeout=ANSWER_TIMEOUT_S, label=f"{java_class} (rocketmq-client)")


def _golden(strategy: ExecStrategyUnderTest, java_class: str, builtin: str, verdict: StrategyVerdict) -> None:
    lines = [line for line in golden_lines(builtin) if line["strategy"] == java_class and as_request(line)]
    outcomes = strategy.allocate_many([as_request(line) for line in lines])  # type: ignore[misc]
    verdict.golden_lines = len(lines)
    for line, outcome in zip(lines, outcomes, strict=True):
        want = protocol_answer(line)
        got = {"error": outcome.error} if outcome.error is not None else {
            "result": [mq.to_json() for mq in outcome.queues]}
        if got != want:
            verdict.golden_mismatches.append(f"{line['case']} currentCID={line['currentCID']!r}: "
                                             f"golden {want}, Java {got}")


def gate_strategies(classpath: list[str], examples: int = DEFAULT_EXAMPLES,
                    say: Callable[[str], None] = lambda _: None) -> tuple[list[StrategyVerdict], StrategyVerdict]:
    """Every strategy's verdict, and the control's (its ``passed`` must be False)."""
    log_dir = Path(tempfile.mkdtemp(prefix="mqtck-java-strategies-"))
    verdicts = []
    try:
        for java_class, builtin in (*JAVA_STRATEGIES.items(), CONTROL):
            verdict = StrategyVerdict(java_class, builtin)
            strategy = driver(classpath, java_class, log_dir)
            try:
                if (java_class, builtin) != CONTROL:
                    _golden(strategy, java_class, builtin, verdict)
                report = run_check(strategy, BUILTIN_DECLARATIONS[builtin], CheckSettings(examples=examples))
            finally:
                strategy.close()
            verdict.properties = {r.name: r.status for r in report.results}
            verdict.exit_code = report.exit_code
            say(f"{java_class}: golden {verdict.golden_lines - len(verdict.golden_mismatches)}/{verdict.golden_lines}"
                f", properties {report.exit_code == 0 and 'pass' or 'FAIL'}")
            verdicts.append(verdict)
    finally:
        shutil.rmtree(log_dir, ignore_errors=True)
    return verdicts[:-1], verdicts[-1]


#: What the gate judges of each ALLOC requirement: the strategies whose golden replay (``golden``) or whose
#: property (``property``) proves it: the seed-backed cores of ALLOC-4..6 by a property (a golden mismatch, Apache's
#: exact arithmetic, fails only their upstream details ALLOC-19..21). ALLOC-1 (the rebalance sorts) and ALLOC-15..17
#: and 22 (the broker's POP allocation) are not about these classes: not applicable.
REQUIREMENT_EVIDENCE: dict[str, tuple[str, tuple[str, ...]]] = {
    "ALLOC-2": ("golden", ("AllocateMessageQueueAveragely",)),
    "ALLOC-3": ("golden", ("AllocateMessageQueueAveragelyByCircle",)),
    "ALLOC-4": ("partition", ("AllocateMessageQueueConsistentHash",)),
    "ALLOC-5": ("machine-room", ("AllocateMessageQueueByMachineRoom",)),
    "ALLOC-6": ("machine-room", ("AllocateMachineRoomNearby",)),
    "ALLOC-7": ("golden", ("AllocateMessageQueueByConfig",)),
    "ALLOC-8": ("golden", tuple(JAVA_STRATEGIES)),
    "ALLOC-9": ("golden", tuple(JAVA_STRATEGIES)),
    "ALLOC-10": ("partition", tuple(JAVA_STRATEGIES)),
    "ALLOC-11": ("balance", ("AllocateMessageQueueAveragely", "AllocateMessageQueueAveragelyByCircle",
                             "AllocateMessageQueueByMachineRoom")),
    "ALLOC-12": ("determinism", tuple(JAVA_STRATEGIES)),
    "ALLOC-13": ("stickiness", ("AllocateMessageQueueConsistentHash",)),
    "ALLOC-14": ("machine-room", ("AllocateMessageQueueByMachineRoom", "AllocateMachineRoomNearby")),
    "ALLOC-18": ("protocol", tuple(JAVA_STRATEGIES)),
    "ALLOC-19": ("golden", ("AllocateMessageQueueConsistentHash",)),
    "ALLOC-20": ("golden", ("AllocateMessageQueueByMachineRoom",)),
    "ALLOC-21": ("golden", ("AllocateMachineRoomNearby",)),
}
NOT_APPLICABLE = ("ALLOC-1", "ALLOC-15", "ALLOC-16", "ALLOC-17", "ALLOC-22")


def requirement_entries(verdicts: list[StrategyVerdict]) -> list[dict[str, Any]]:
    """The ALLOC requirements as a conformance run reports them (``summary.json``'s ``requirements``), so the
    gate's run joins ``mqtck matrix``: each passes when every strategy that proves it passed that check."""
    from conformance import spec

    by_class = {v.java_class: v for v in verdicts}
    reqs = spec.requirements()
    entries = []
    for rid in sorted((*REQUIREMENT_EVIDENCE, *NOT_APPLICABLE), key=lambda r: int(r.split("-")[1])):
        req = reqs[rid]
        tests = []
        if rid in REQUIREMENT_EVIDENCE:
            check, classes = REQUIREMENT_EVIDENCE[rid]
            for java_class in classes:
                v = by_class[java_class]
                ok = (not v.golden_mismatches if check == "golden"
                      else check == "protocol" or v.properties.get(check) != "fail")
                first = v.golden_mismatches[0] if check == "golden" and v.golden_mismatches else ""
                tests.append({"nodeid": f"java-strategies::{java_class}::{check}",
                              "outcome": "passed" if ok else "failed", "message": first})
            status = "pass" if all(t["outcome"] == "passed" for t in tests) else "fail"
        else:
            status = "not-applicable"
            tests.append({"nodeid": "java-strategies", "outcome": "skipped",
                          "message": "not about the client's strategy classes"})
        entries.append({"id": rid, "level": req.level, "family": req.family, "sentence": req.sentence,
                        "source": req.source, "status": status, "tests": tests})
    return entries


def command_line(classpath: list[str], verdict: StrategyVerdict) -> str:
    """The ``mqtck strategy check`` command that checks one of these strategies by hand, with its promises."""
    program = shlex.join(["java", "-cp", os.pathsep.join(classpath), str(DRIVER), verdict.java_class])
    return shlex.join(["mqtck", "strategy", "check", "--exec", program,
                       *BUILTIN_DECLARATIONS[verdict.builtin].cli_flags()])


def junit_xml(classpath: list[str], verdicts: list[StrategyVerdict], control: StrategyVerdict) -> bytes:
    """The gate as JUnit XML: per strategy its golden replay and each property, and the control (which must be
    caught). Every failure gates; its text is the command that reproduces it."""
    gates = (("gates", "true"),)

    def case(classname: str, name: str, failed: str | None, reproduce: str) -> JUnitCase:
        return JUnitCase(classname, name, properties=gates,
                         failure=None if failed is None else (failed, f"reproduce: {reproduce}"))

    cases: list[JUnitCase] = []
    for v in verdicts:
        reproduce = command_line(classpath, v)
        mismatched = len(v.golden_mismatches)
        differ = f"{mismatched} of {v.golden_lines} golden vectors differ: {'; '.join(v.golden_mismatches[:3])}"
        cases.append(case(v.java_class, "golden", differ if mismatched else None, reproduce))
        cases += [case(v.java_class, name, f"property {name} failed" if status == "fail" else None, reproduce)
                  for name, status in v.properties.items()]
    caught = [name for name, status in control.properties.items() if status == "fail"]
    uncaught = "the broken control strategy passed every property: the check catches nothing"
    cases.append(case(control.java_class, "control is caught", None if caught else uncaught,
                      command_line(classpath, control)))
    return testsuite_xml("mqtck gate java-strategies", cases)
