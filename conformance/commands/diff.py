"""``mqtck diff``: run two targets in lockstep on random operation sequences and shrink the first divergence.

Examples::

    mqtck diff --target mutant:offset-empty-queue-keeps-offset --examples 100
    mqtck diff --target remoting://127.0.0.1:9876 --against reference --examples 1000 --report-dir reports/diff
    mqtck diff --target peer:rocketmq-4.9.7 --examples 500 --without restart
    mqtck diff --target peer:rocketmq-proxy-5.5.0 --against grpc --examples 300
    mqtck diff --target peer:pulsar-4.0.7 --examples 300
    mqtck diff --replay reports/diff/divergence.json --target mutant:pull-no-match-not-found

Steps are drawn only from the capabilities both targets have. A divergence is printed as a numbered list of
the shrunk sequence with both answers side by side and the requirements the steps touch, and written as a
replay file (and, with ``--emit-test``, as a pytest test). Exit 0 when no unexplained divergence was found,
1 when one was, 2 for a usage error or an unusable target (one line).

A run repeats (the same sequences, the same first divergence, shrunk alike) for the same --seed, --examples,
--max-steps, --without and pair of targets, on the same mqtck and Hypothesis versions, when both targets are on
simulated time: in-process (reference, mutant:NAME), or a fresh `mqtck broker ... --sim-clock` runner. A target on
real time (a real broker, peer:NAME, a runner without --sim-clock) draws the same sequences but may answer them
differently from run to run (docs/diff.md, "Repeating a run").
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from conformance.cliargs import UsageError, report_dir
from conformance.progress import plain_every_s

#: Default steps per sequence at most.
DEFAULT_MAX_STEPS = 12


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("diff", help="run two targets in lockstep on random sequences; shrink the first divergence")
    p.add_argument("--target", required=True,
                   help="reference, mutant:NAME, http://HOST:PORT, remoting://HOST:PORT[?control=HOST:PORT], "
                        "grpc://HOST:PORT?remoting=HOST:PORT, grpc (the reference over its gRPC front, started for "
                        "the run) or peer:NAME (a broker or proxy of `mqtck peer list`, started for the run)")
    p.add_argument("--against", default="reference",
                   help="the target it is compared with, any --target form (default: reference)")
    p.add_argument("--examples", type=int, default=100, help="sequences to draw at most (default 100)")
    p.add_argument("--seed", type=int, default=0,
                   help="the random seed (default 0); a run repeats on targets on simulated time (see above)")
    p.add_argument("--max-steps", type=int, default=DEFAULT_MAX_STEPS,
                   help=f"steps per sequence at most (default {DEFAULT_MAX_STEPS})")
    p.add_argument("--without", nargs="+", default=[], metavar="STEP",
                   help="never draw these step kinds (e.g. restart retention: a JVM broker takes seconds for each)")
    p.add_argument("--expect", default=None, metavar="NAME|FILE",
                   help="the implementation's expectations file: its [[diff]] entries (allowed differences and "
                        "reviewed deviations) are not compared (default: the peer's, for peer:NAME)")
    p.add_argument("--report-dir", default=None, type=report_dir,
                   help="write diff.json, the replay file and the emitted test here")
    p.add_argument("--replay", default=None, metavar="FILE", help="run a replay file's sequence once instead")
    p.add_argument("--emit-test", action="store_true", help="also write a pytest test reproducing the divergence")
    p.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    p.set_defaults(func=run)


def _say(text: str) -> None:
    print(f"mqtck diff: {text}", file=sys.stderr, flush=True)


#: RocketMQ's diskSpaceCleanForciblyRatio: above it a RocketMQ broker deletes segments before they expire.
FORCED_CLEAN_RATIO = 0.85


def _warn_of_a_full_disk(*targets: Any) -> None:
    """A broker whose disk is nearly full deletes unexpired segments at once (RocketMQ above 85 %), which the
    reference does not model: min offsets then differ for no fault of either (found when a long diff filled the
    machine's disk). Say so before the run, once per such target."""
    for target in targets:
        if "store_layout" not in target.capabilities:
            continue
        ratio = target.store_layout().disk_used_ratio
        if ratio is not None and ratio > FORCED_CLEAN_RATIO:
            _say(f"warning: {target.name}'s disk is {ratio:.0%} used; above {FORCED_CLEAN_RATIO:.0%} a RocketMQ broker "
                 "deletes segments before they expire (diskSpaceCleanForciblyRatio) and min offsets will differ: "
                 "free disk space first")


def _say_when_on_real_time(*targets: Any) -> None:
    """A target without clock control makes the whole pair run in real time: every hold and wait of a step is
    spent waiting, some tenths of a sequence a second, so fifty sequences take minutes. Say so before the run,
    with the faster way when the target is the reference runner."""
    for target in targets:
        if "clock_control" not in target.capabilities:
            _say(f"{target.name} runs on real time (no clock control): each hold and wait takes real seconds, about "
                 "0.3 sequences/s; the reference runner served with --sim-clock (with --control over remoting) "
                 "runs on simulated time, 2-6 sequences/s")


class _Progress:
    """Plain progress lines on stderr (a CI log and a terminal alike), at most every ``plain_every_s()`` (the
    interval of every command's progress, ``MQTCK_PROGRESS_EVERY_S``)."""

    def __init__(self, examples: int) -> None:
        self.examples = examples
        self._last = time.monotonic()
        self._every = plain_every_s()

    def __call__(self, stats: Any) -> None:
        now = time.monotonic()
        if now - self._last < self._every:
            return
        self._last = now
        phase = "shrinking" if stats.divergences else "searching"
        rate = stats.steps / stats.elapsed_s if stats.elapsed_s else 0.0
        shortest = (f"; shortest: {stats.shortest_steps} steps, step {stats.shortest_steps} {stats.shortest} differs"
                    if stats.shortest_steps else "")
        _say(f"{phase}: {min(stats.sequences, self.examples)}/{self.examples} sequences, {stats.steps} steps, "
             f"{rate:.0f} steps/s, {stats.divergences} diverging runs{shortest}")


def _check_args(args: argparse.Namespace) -> None:
    if args.examples < 1:
        raise UsageError(f"--examples must be >= 1, got {args.examples}")
    if not 1 <= args.max_steps <= 100:
        raise UsageError(f"--max-steps must be in [1, 100], got {args.max_steps}")
    from conformance.diff.steps import STEP_KINDS

    unknown = sorted(set(args.without) - set(STEP_KINDS))
    if unknown:
        raise UsageError(f"--without: unknown step kind {unknown[0]!r}; kinds: {', '.join(sorted(STEP_KINDS))}")
    if args.emit_test and args.report_dir is None:
        raise UsageError("--emit-test needs --report-dir (where the test is written)")


def run(args: argparse.Namespace) -> int:
    from conformance.diff.avoid import avoid_for
    from conformance.diff.compare import rules_for
    from conformance.diff.settings import settings_for
    from conformance.expectations import ExpectationError
    from conformance.targets.http import UnreachableTarget
    from conformance.targets.registry import parse_target

    _check_args(args)
    stack = contextlib.ExitStack()
    with stack:
        try:
            target, expect = _serve(args.target, stack)
            expect = args.expect or expect
            rules, settings = rules_for(expect), settings_for(expect)
            against, _ = _serve(args.against, stack, settings)
            for text in (target, against):
                parse_target(text)
            if args.replay is not None:
                return _replay(args, target, against, rules, settings, expect)
            # A replay steps around what its file says (_replay), a search what the expectations say.
            return _search(args, target, against, expect, rules, settings, avoid_for(expect))
        except (ValueError, ExpectationError, UnreachableTarget) as exc:
            raise UsageError(str(exc)) from None


def _serve(text: str, stack: contextlib.ExitStack,
           settings: dict[str, object] | None = None) -> tuple[str, str | None]:
    """A target address for ``text``: ``peer:NAME`` starts the peer for the run (and names its expectations), a
    broker or a proxy; ``grpc`` starts the reference over its gRPC front (:func:`_serve_grpc_reference`) with the
    expectations' ``[[reference]]`` ``settings``."""
    from conformance.targets.registry import EMBEDDED_GRPC

    if text == EMBEDDED_GRPC:
        return _serve_grpc_reference(stack, settings or {}), None
    if not text.startswith("peer:"):
        return text, None
    from conformance import expectations
    from conformance.peers import PeerError, peer_info
    from conformance.peers.serving import install, served

    name = text.split(":", 1)[1]
    try:
        info = peer_info(name)
        _say(f"resolving and starting {info.name}")
        if info.wire == "pulsar":
            address = _serve_pulsar(info, stack)
        else:
            install(info, sys.stderr)
            address = stack.enter_context(served(info))
    except PeerError as exc:
        raise UsageError(str(exc)) from None
    _say(f"{info.name} serves {address}")
    return address, info.name if info.name in expectations.known() else None


def _serve_pulsar(info: Any, stack: contextlib.ExitStack) -> str:
    """A Pulsar broker peer (``peer:pulsar-4.0.7``): the standalone of ``mqtck peer run`` and ``mqtck gate``
    (:mod:`conformance.peers.pulsar`), its ``pulsar://`` address; the RocketMQ launchers cannot serve it."""
    from conformance.peers.maven import pulsar_classpath
    from conformance.peers.pulsar import served as served_pulsar

    pulsar_classpath(info.version)
    peer = stack.enter_context(served_pulsar(info))
    _say(f"{info.name} ready after {peer.ready_after_s:.1f} s (RSS {peer.rss_bytes >> 20} MiB)")
    return peer.target


#: The ``mqtck broker`` flag of each MessageStoreConfig field an expectations file's ``[[reference]]`` entry may set
#: on a reference served as a child process (``grpc``): an in-process reference takes any field.
SETTING_FLAGS = {"offset_overflow_to_max": "--offset-overflow-to-max"}


def _serve_grpc_reference(stack: contextlib.ExitStack, settings: dict[str, object]) -> str:
    """``grpc``: the reference served by a child ``mqtck broker --remoting --grpc --control`` in a temp dir under
    the real proxy peer's receive limits (``REFERENCE_FLAGS``), as ``mqtck conform --target grpc`` serves it, so
    that ``--target peer:rocketmq-proxy-5.5.0 --against grpc`` compares the two over the same wire and settings;
    with the ``[[reference]]`` settings of the other side's expectations, as an in-process reference takes them
    (found by mqtck diff against the proxy: without OFFSET-4's overflow to max, a pop after a commit past the end
    diverged at once); stopped when the run ends."""
    import shutil

    from conformance.peers.rocketmq_proxy import REFERENCE_FLAGS
    from conformance.targets.launch import launch_broker

    flags = []
    for name, value in sorted(settings.items()):
        if name not in SETTING_FLAGS or value is not True:
            raise UsageError(f"grpc: the reference's setting {name}={value!r} cannot be given to a served reference "
                             f"(it takes {', '.join(f'{k}=true' for k in SETTING_FLAGS)})")
        flags.append(SETTING_FLAGS[name])
    workdir = Path(tempfile.mkdtemp(prefix="mqtck-diff-grpc-"))
    stack.callback(shutil.rmtree, workdir, ignore_errors=True)
    try:
        server = launch_broker("grpc", workdir / "data", "--control", *REFERENCE_FLAGS, *flags)
    except RuntimeError as exc:
        raise UsageError(f"grpc: the reference's gRPC front did not start: {exc}"[:300]) from None
    stack.callback(server.stop)
    _say(f"the reference serves {server.url}" + (f" ({' '.join(flags)})" if flags else ""))
    return server.url


def _replay(args: argparse.Namespace, target: str, against: str, rules: tuple[Any, ...],
            settings: dict[str, object], expect: str | None) -> int:
    """Run a replay file's program once; with ``--report-dir``, a divergence is written there as a replay file that
    records it (a hand-written repro kept as a fixture, like a divergence the search found)."""
    from conformance.diff.avoid import from_document
    from conformance.diff.replay import listing, read_replay, replay, replay_document

    program, document = read_replay(Path(args.replay))
    # What the file's search stepped around, not what the expectations say today: a hand-written repro of an avoided
    # deviation must still show it.
    avoid = from_document(document.get("avoid"))
    divergence = replay(program, target, against, rules, settings, avoid)
    if divergence is None:
        _say(f"the {len(program.steps)} steps of {args.replay} agree on {target} and {against}")
        return 0
    print(listing(divergence, target, against))
    if args.report_dir is not None:
        out = Path(args.report_dir) / "divergence.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        recorded = replay_document(divergence, args.target, args.against, document.get("seed"), expect, avoid)
        out.write_text(json.dumps(recorded, indent=2) + "\n", encoding="utf-8")
        _say(f"the divergence is recorded in {out}")
    return 1


def _search(args: argparse.Namespace, target: str, against: str, expect: str | None, rules: tuple[Any, ...],
            settings: dict[str, object], avoid: tuple[Any, ...]) -> int:
    from conformance.diff.replay import listing
    from conformance.diff.runner import Lockstep, TargetBroken, open_pair, search

    with tempfile.TemporaryDirectory(prefix="mqtck-diff-") as workdir:
        a, b = open_pair(target, against, Path(workdir), settings)
        try:
            both = a.capabilities & b.capabilities
            if settings:
                _say("the reference runs as the expectations say: " +
                     ", ".join(f"{k}={v}" for k, v in sorted(settings.items())))
            _say(f"{target} vs {against}: up to {args.examples} sequences of up to {args.max_steps} steps over "
                 f"{', '.join(sorted(both))}")
            _warn_of_a_full_disk(a, b)
            _say_when_on_real_time(a, b)
            for entry in avoid:
                _say(f"stepping around {entry.id} as {expect} says ({entry.behaviour}): such steps run on neither "
                     "target and are counted")
            lockstep = Lockstep(a, b, rules, on_sequence=_Progress(args.examples), avoid=avoid)
            try:
                result = search(lockstep, both, args.examples, args.seed, args.max_steps, frozenset(args.without))
            except TargetBroken as exc:
                raise UsageError(f"target unusable: {exc}") from None
        finally:
            a.close()
            b.close()
    stats = result.stats
    summary: dict[str, Any] = {
        "target": target, "against": against, "seed": args.seed, "expect": expect,
        "sequences": stats.sequences, "steps": stats.steps, "elapsed_s": round(stats.elapsed_s, 3),
        "sequences_per_s": round(stats.sequences / stats.elapsed_s, 2) if stats.elapsed_s else None,
        "steps_per_s": round(stats.steps / stats.elapsed_s, 1) if stats.elapsed_s else None,
        "diverged": result.divergence is not None, "sequences_to_first_divergence": stats.first_at,
        "flaky": result.flaky,
        "excused": [{"step": r.step, "field": r.field, "kind": r.kind, "id": r.id, "when": r.when,
                     "given": r.given, "times": n}
                    for r, n in stats.excused.items()],
        "steps_by_kind": dict(sorted(stats.kinds.items())),
        # What the run did not compare: steps of a reviewed deviation it stepped around ([[avoid]]).
        "avoided": [{"behaviour": a.behaviour, "id": a.id, "steps": stats.avoided.get(a, 0)} for a in avoid],
    }
    divergence = result.divergence
    if divergence is not None:
        summary["shrunk_steps"] = divergence.index + 1
        summary["first_found_steps"] = result.first.index + 1 if result.first else None
    if args.report_dir is not None:
        _write_reports(Path(args.report_dir), summary, divergence, args, target, against, expect, avoid)
    if args.json:
        print(json.dumps(summary, indent=2))
    if divergence is None:
        if not args.json:
            print(_agreement(summary))
        return 0
    if not args.json:
        flaky = " (it did not reproduce while shrinking: timing-dependent)" if result.flaky else ""
        steps = divergence.index + 1
        print(f"divergence after {stats.first_at} sequences, shrunk to {steps} step{'s' if steps > 1 else ''}{flaky}:")
        print(listing(divergence, target, against))
    return 1


def _agreement(summary: dict[str, Any]) -> str:
    """What a run that found nothing covered, on stdout: an empty stdout reads as "diff did nothing", and the
    counts per step kind show whether the steps that reach a behaviour were drawn at all."""
    kinds = summary["steps_by_kind"]
    width = max((len(kind) for kind in kinds), default=4)
    lines = [f"no divergence: {summary['target']} and {summary['against']} agree on {summary['sequences']} sequences, "
             f"{summary['steps']} steps (seed {summary['seed']}, {summary['elapsed_s']:.1f} s)",
             "steps run, by kind:"]
    lines += [f"  {kind:<{width}}  {n:>6}" for kind, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))]
    lines += [f"not compared: {a['steps']} steps stepped around for {a['id']} ({a['behaviour']}, [[avoid]])"
              for a in summary.get("avoided", [])]
    return "\n".join(lines)


def _write_reports(directory: Path, summary: dict[str, Any], divergence: Any, args: argparse.Namespace,
                   target: str, against: str, expect: str | None, avoid: tuple[Any, ...]) -> None:
    from conformance.diff.replay import emit_test, replay_document, test_name

    directory.mkdir(parents=True, exist_ok=True)
    (directory / "diff.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    if divergence is None:
        return
    replay_file = directory / "divergence.json"
    # The targets as given (peer:NAME), not the addresses they were served at for this run.
    document = replay_document(divergence, args.target, args.against, args.seed, expect, avoid)
    replay_file.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    command = ["mqtck", "diff", "--replay", str(replay_file), "--target", args.target, "--against", args.against]
    _say(f"replay: {shlex.join(command)}")
    if args.emit_test:
        name = test_name(divergence.step.kind, args.target, args.seed, summary["sequences_to_first_divergence"])
        test_file = directory / f"test_diff_{name}.py"
        test_file.write_text(emit_test(divergence, target, against, expect, name, avoid), encoding="utf-8")
        _say(f"test: {test_file}")
