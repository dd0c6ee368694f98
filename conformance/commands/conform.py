"""``mqtck conform``: run the conformance suite against a target and write the reports.

Writes ``<report-dir>/<run>/{summary.json,junit.xml,report.html}`` and points
``<report-dir>/latest`` at the run. Exit 0 when every applicable MUST passed, 1 otherwise, 2 for a
usage error or an unusable target (one line).
"""

from __future__ import annotations

import argparse
import json
import re
import time
from dataclasses import dataclass, field, fields
from pathlib import Path

import pytest
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from conformance import expectations, report, spec
from conformance.cliargs import UsageError, report_dir
from conformance.mutants import killing
from conformance.progress import Ticker
from conformance.targets.registry import EMBEDDED_GRPC, parse_target, target_capabilities

SUITE_DIR = Path(__file__).resolve().parents[1] / "suite"


@dataclass(frozen=True)
class ConformOptions:
    """``mqtck conform``'s options, typed, with the parser's defaults: ``mqtck gate`` runs conform with one of
    these rather than with words for a parser, so its options are checked where they are written."""

    target: str = "reference"
    report_dir: str = "reports"
    junit: str | None = None
    only: list[str] | None = None
    workers: int = 1
    json: bool = False
    expect: str | None = None
    profile: list[str] = field(default_factory=list)
    slow: bool = False
    implementation: str | None = None
    #: A reader's name for the implementation (``Apache RocketMQ 4.9.7``): the report's heading and the JUnit
    #: testsuite's name; ``mqtck gate`` sets it from the peer, otherwise it is ``implementation``.
    title: str | None = None
    mutants: list[str] | None = None
    client: str | None = None
    client_scenarios: list[str] | None = None
    #: ``--client-protocol``: remoting (the CCLIENT check) or grpc (the PCLIENT check of a RocketMQ 5 consumer).
    client_protocol: str = "remoting"
    client_duration_s: float | None = None
    rebalance_grace_s: float | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ConformOptions:
        """The options ``register``'s parser produced (a Namespace holds other keys too: ``command``, ``func``); an
        option the parser does not offer (``title``, which only ``mqtck gate`` knows) keeps its default."""
        return cls(**{f.name: getattr(args, f.name) for f in fields(cls) if hasattr(args, f.name)})


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("conform", help="run the conformance suite against a target; write reports")
    p.add_argument("--target", default="reference",
                   help="reference (default), mutant:NAME, http://HOST:PORT (a server of the HTTP front's API), "
                        "remoting://HOST:PORT (a RocketMQ-protocol broker's name server), pulsar://HOST:PORT (a "
                        "Pulsar broker's service URL: the FLOW family) or grpc://HOST:PORT?remoting=HOST:PORT (a "
                        "RocketMQ 5 MessagingService, with the name server of the same deployment); grpc alone serves "
                        "the reference with its gRPC front and judges that")
    p.add_argument("--report-dir", default="reports", type=report_dir, help="where runs are written (default: reports)")
    p.add_argument("--junit", default=None, help="also write the JUnit XML here (for CI upload)")
    p.add_argument("--only", nargs="+", default=None, metavar="ID", help="run only tests of these requirement IDs")
    p.add_argument("-n", "--workers", type=int, default=1, help="parallel pytest-xdist workers (default 1)")
    p.add_argument("--json", action="store_true", help="print summary.json to stdout instead of a table")
    p.add_argument("--expect", default=None, metavar="NAME|FILE",
                   help="reviewed deviations of the implementation (conformance/expectations/NAME.toml or a file): "
                        "their failures are reported as expected-fail and do not gate")
    p.add_argument("--profile", action="append", default=[], choices=spec.PROFILES,
                   help="opt into a named profile: its SHOULDs (the reference's stricter rules) gate like MUSTs")
    p.add_argument("--slow", action="store_true",
                   help="the slow profile: tests wait as long as a real broker with its defaults needs (e.g. a "
                        "silent channel's 120 s expiry) instead of reporting those clauses not applicable")
    p.add_argument("--implementation", default=None, metavar="LABEL",
                   help="what the target is, for reports and the results matrix (default: the target)")
    p.add_argument("--mutants", nargs="*", default=None, metavar="NAME",
                   help="also run the suite against seeded faults (all when no NAME) and report the kill rate; "
                        "reference target only")
    from conformance.commands.conform_client import add_arguments as add_client_arguments

    add_client_arguments(p)
    p.set_defaults(func=run)


class _Progress:
    """pytest plugin that counts finished tests on a :class:`Ticker` (a bar on a terminal, lines in a log)."""

    def __init__(self, ticker: Ticker) -> None:
        self.ticker = ticker

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.ticker.total(len(session.items))

    def pytest_xdist_node_collection_finished(self, node: object, ids: list[str]) -> None:
        """With workers the controller collects nothing itself; each worker reports the same whole list."""
        self.ticker.total(len(ids))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "teardown":
            self.ticker.advance(report.nodeid.split("::")[-1])


def check_target(text: str) -> frozenset[str]:
    """Parse the target and learn its capabilities; a bad or unreachable target is a usage error."""
    from conformance.targets.http import UnreachableTarget

    try:
        parse_target(text)
        return target_capabilities(text)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    except UnreachableTarget as exc:
        raise UsageError(f"target unreachable: {exc}") from None


def _mutant_names(args: ConformOptions) -> list[str]:
    if args.mutants is None:
        return []
    from conformance.mutants import CATALOGUE

    if args.target != "reference":
        raise UsageError("--mutants runs seeded faults of the reference; use it with --target reference")
    unknown = [n for n in args.mutants if n not in CATALOGUE]
    if unknown:
        raise UsageError(f"--mutants: unknown seeded fault(s) {', '.join(unknown)}")
    return list(args.mutants) or sorted(CATALOGUE)


def run(args: argparse.Namespace) -> int:
    return conform(ConformOptions.from_args(args))


def _conform_embedded_grpc(args: ConformOptions) -> int:
    """``--target grpc``: the reference served with its remoting and gRPC fronts and its control channel by a child
    ``mqtck broker`` in a temp dir, judged through ``grpc://`` like a RocketMQ 5 proxy; stopped afterwards."""
    import dataclasses
    import shutil
    import tempfile

    from conformance.peers.rocketmq_proxy import REFERENCE_FLAGS
    from conformance.targets.launch import launch_broker

    workdir = Path(tempfile.mkdtemp(prefix="mqtck-conform-grpc-"))
    try:
        try:
            server = launch_broker("grpc", workdir / "data", "--control", *REFERENCE_FLAGS)
        except RuntimeError as exc:
            raise UsageError(f"--target grpc: the reference's gRPC front did not start: {exc}"[:300]) from None
        try:
            return conform(dataclasses.replace(args, target=server.url,
                                               implementation=args.implementation or "reference over gRPC"))
        finally:
            server.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def run_name(args: ConformOptions) -> str:
    """What a run's folder is named after: the implementation when given, else the target, but for a served
    target its kind (``remoting``, ``http``), never its address: a port is a throwaway, not what was judged."""
    if args.implementation:
        return args.implementation
    target = parse_target(args.target)
    return args.target if target.kind in ("reference", "mutant") else target.kind


def conform(args: ConformOptions) -> int:
    """Run the suite (or, with ``client``, the client check) as ``args`` say; the exit code."""
    if args.client is not None and args.client_protocol == "grpc":
        from conformance.commands import conform_pop_client

        if args.client_duration_s is not None or args.rebalance_grace_s is not None:
            raise UsageError("--client-duration-s and --rebalance-grace-s are the remoting check's; --client-protocol "
                             "grpc runs each scenario until its messages are consumed")
        return conform_pop_client.run(args.client, args.client_scenarios, expect=args.expect,
                                      report_dir=args.report_dir, implementation=args.implementation,
                                      junit=args.junit, as_json=args.json)
    if args.target == EMBEDDED_GRPC and args.client is None:
        return _conform_embedded_grpc(args)
    if args.client is not None:
        from conformance.commands import conform_client

        return conform_client.run(args.client, args.client_scenarios, args.client_duration_s, args.rebalance_grace_s,
                                  expect=args.expect, report_dir=args.report_dir, implementation=args.implementation,
                                  junit=args.junit, as_json=args.json)
    capabilities = check_target(args.target)
    if args.workers < 1:
        raise UsageError("-n/--workers must be >= 1")
    mutant_names = _mutant_names(args)
    expected = expectations.load_option(args.expect)
    if args.only:
        _, reqs = spec.load()
        unknown = [i for i in args.only if i not in reqs]
        if unknown:
            raise UsageError(f"--only: unknown requirement ID(s) {', '.join(unknown)}")
    report_dir = Path(args.report_dir)
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", run_name(args))
    run_dir = report_dir / f"{time.strftime('%Y%m%d-%H%M%S')}-{slug}"
    run_dir.mkdir(parents=True, exist_ok=True)
    results_file = run_dir / "results.jsonl"
    ini = run_dir / "pytest.ini"
    ini.write_text("[pytest]\n", encoding="utf-8")

    def pytest_args(results: Path, *extra: str) -> list[str]:
        return [
            str(SUITE_DIR), "-c", str(ini), "--rootdir", str(SUITE_DIR), "-p", "no:cacheprovider",
            "-p", "no:terminal", f"--mqtck-target={args.target}", f"--mqtck-results={results}",
            "-W", "ignore::pytest.PytestAssertRewriteWarning",
            *([f"--mqtck-only={','.join(args.only)}"] if args.only else []),
            *(["--mqtck-slow"] if args.slow else []), *extra,
        ]

    # With several workers, the tests that act on the whole broker (restart, retention, run-time settings) would
    # disturb the others: they run afterwards, on one worker, into a results file of their own. A served broker on
    # simulated time has one clock for every test: one test's advance moves another's held requests and
    # invisibility, so its tests all run on one worker (in-process, each test has a reference of its own).
    console = Console(stderr=True)
    workers = args.workers
    served = parse_target(args.target).kind not in ("reference", "mutant")
    if workers > 1 and served and "clock_control" in capabilities:
        workers = 1
        if not args.json:
            console.print(f"mqtck conform: {args.target} runs on simulated time, one clock for every test: "
                          f"running on one worker, not {args.workers}", markup=False, highlight=False)
    phases = [pytest_args(results_file)] if workers == 1 else [
        pytest_args(results_file, "-n", str(workers), "--mqtck-phase=shared"),
        pytest_args(Path(f"{results_file}.exclusive"), "--mqtck-phase=exclusive"),
    ]
    started = time.monotonic()
    with Ticker("conform", "conformance tests", quiet=args.json, console=console) as ticker:
        for n, phase_args in enumerate(phases):
            if len(phases) > 1:
                ticker.phase(("tests on several workers", "tests that act on the whole broker, alone")[n])
            code = pytest.main(phase_args, plugins=[_Progress(ticker)])
            if code == pytest.ExitCode.INTERRUPTED:  # pytest caught the Ctrl-C: an interrupt (130), not a usage error
                raise KeyboardInterrupt
            if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED):
                raise UsageError(f"the suite could not run (pytest exit {int(code)}); see {run_dir}")
    elapsed = time.monotonic() - started
    results = report.load_results(sorted(run_dir.glob("results.jsonl*")))
    vs = report.verdicts(results, expected)
    if args.only:
        # What was asked for, and what the tests that ran also judged; the rest was not run, not "not covered".
        vs = [v for v in vs if v.id in args.only or v.tests]
    extra: dict = {"duration_s": round(elapsed, 3), "run": run_dir.name,
                   "implementation": args.implementation or args.target,
                   "title": args.title or args.implementation or args.target, "profiles": args.profile,
                   "slow": args.slow}
    if expected is not None:
        extra["expectations"] = expected.name
    if mutant_names:
        mutants_started = time.monotonic()
        extra["mutants"] = killing.run_catalogue(mutant_names, run_dir / "mutants", args.workers, console, args.json)
        extra["mutants"]["duration_s"] = round(time.monotonic() - mutants_started, 3)
    doc = report.summary(args.target, capabilities, vs, results, extra, args.profile)
    report.publish(report_dir, run_dir, doc, vs, Path(args.junit) if args.junit else None)
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        _print_table(console, doc, run_dir)
    return report.exit_code(vs, args.profile)


#: The statuses printed last, each with its label, what it says before the sentence, and the test outcome whose
#: summaries are listed under it.
_UNJUDGED_OR_FAILED = {
    "fail": ("[red]FAIL[/red]", "", "failed"),
    "error": ("[magenta]ERROR[/magenta]", "not judged, a test's setup failed: ", "error"),
}


def _print_table(console: Console, doc: dict, run_dir: Path) -> None:
    table = Table(title=f"mqtck conform — {doc['target']}")
    statuses = tuple(report.STATUSES)
    for col in ("family", *statuses):
        table.add_column(col, justify="right" if col != "family" else "left")
    fams: dict[str, dict[str, int]] = {}
    for r in doc["requirements"]:
        fams.setdefault(r["family"], {}).setdefault(r["status"], 0)
        fams[r["family"]][r["status"]] += 1
    for fam, c in fams.items():
        table.add_row(fam, *(str(c.get(k, 0)) for k in statuses))
    out = Console()
    out.print(table)
    # Failures come last, just above the verdict: a CI log is read from its tail, and a long list of
    # reviewed expected fails must not push the one line that decides the run out of view.
    for r in doc["requirements"]:
        if r["status"] == "expected-fail":
            out.print(f"[yellow]EXPECTED FAIL[/yellow] {r['id']} ({r['level']}): {r['expectation']['reason']}")
        elif r["status"] == "unexpected-pass":
            out.print(f"[blue]UNEXPECTED PASS[/blue] {r['id']}: listed in {doc.get('expectations')}, remove the entry")
        elif r["status"] == "pass" and r.get("expectation"):
            out.print(f"[blue]NOT SHOWN[/blue] {r['id']}: an intermittent deviation listed in {doc.get('expectations')}"
                      " passed this run")
    for what, value in report.noticed(doc):
        out.print(f"[yellow]NOTICED[/yellow] {what}: {escape(value)}", highlight=False)
    for r in doc["requirements"]:
        if r["status"] not in _UNJUDGED_OR_FAILED:
            continue
        label, said, outcome = _UNJUDGED_OR_FAILED[r["status"]]
        out.print(f"{label} {r['id']} ({r['level']}): {said}{r['sentence']}")
        for t in r["tests"]:
            if t["outcome"] == outcome:
                out.print(f"    {t['nodeid'].split('::')[-1]}: {t['summary']}", markup=False, highlight=False)
    if "mutants" in doc:
        m = doc["mutants"]
        out.print(f"seeded faults killed: {m['killed']} of {m['total']} ({m['kill_rate']:.0%})")
        for r in m["results"]:
            if not r["killed"]:
                out.print(f"[red]SURVIVED[/red] {r['name']}: {r['description']}")
    out.print(f"verdict: [bold]{doc['verdict'].upper()}[/bold] in {report.took(doc)} — reports in {run_dir}")
