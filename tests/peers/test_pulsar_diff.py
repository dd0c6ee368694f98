"""``mqtck diff`` of the real Apache Pulsar 4.0.7 standalone against the in-process reference (issue 39): every
divergence found is resolved (docs/pulsar-peer.md, "The reference against the real Pulsar"). Each one kept as a
replay file (``fixtures/diff/pulsar-4.0.7-*.json``) agrees once its ``[[diff]]`` entry or ``[[reference]]`` setting
resolves it, ``peer:pulsar-4.0.7`` serves as a diff target, and a short search finds nothing unexplained. One
standalone start for the module, one for the ``peer:`` replay: 105 s on a loaded machine (2026-11-29)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.diff.compare import compare, rules_for
from conformance.diff.replay import read_replay, replay
from conformance.diff.settings import settings_for
from conformance.peers import peer_info
from conformance.peers.pulsar import PulsarPeer, served

PEER = "pulsar-4.0.7"
REPLAYS = sorted((Path(__file__).resolve().parents[2] / "fixtures" / "diff").glob(f"{PEER}-*.json"))


@pytest.fixture(scope="module")
def peer() -> Iterator[PulsarPeer]:
    with served(peer_info(PEER)) as running:
        yield running


def _mqtck(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "conformance.cli", "diff", *args], capture_output=True, text=True,
                          timeout=600, check=False)


@pytest.mark.req("FLOW-4")
@pytest.mark.parametrize("replay_file", REPLAYS, ids=lambda p: p.stem)
def test_each_divergence_found_replays_in_agreement_with_its_rule(peer: PulsarPeer, replay_file: Path) -> None:
    """The shrunk program of each divergence, run on the real Pulsar and the reference with the peer's rules and
    reference settings, agrees; without them it diverges as recorded (what they excuse is a real difference), or, for
    the failover pick (the hash ring's choice depends on the run's topic name, so it is intermittent), not at all."""
    program, document = read_replay(replay_file)
    recorded = document["divergence"]
    rules, settings = rules_for(PEER), settings_for(PEER)
    assert replay(program, peer.target, "reference", rules, settings) is None
    # Without what resolved it: the rules that excuse the recorded difference, or else the reference settings.
    resolving = compare(recorded["kind"], recorded["target"], recorded["against"], rules).excused
    if resolving:
        bare = replay(program, peer.target, "reference", tuple(r for r in rules if r not in resolving), settings)
    else:
        bare = replay(program, peer.target, "reference", rules, {})
    if bare is None and "failover" in recorded["target"]:
        return
    assert bare is not None and bare.index + 1 == recorded["step"]
    assert list(bare.difference.fields) == recorded["fields"]
    assert (bare.a, bare.b) == (recorded["target"], recorded["against"])


@pytest.mark.req("FLOW-2", "FLOW-3", "FLOW-4")
def test_a_short_search_finds_no_unexplained_divergence(peer: PulsarPeer) -> None:
    """20 sequences of seed 0 (subscribes of every type, FLOWs, batches of 1-3, sends, min/max) agree once the
    reviewed entries excuse what they name; the re-subscribe entry is used (seed 0 draws one at sequence 4)."""
    done = _mqtck("--target", peer.target, "--expect", PEER, "--examples", "20", "--json")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    summary = json.loads(done.stdout)
    assert summary["sequences"] == 20 and not summary["diverged"]
    assert {"permit_subscribe", "permit_flow"} <= set(summary["steps_by_kind"])
    assert any(rule["id"] == "FLOW-4" and rule["times"] > 0 for rule in summary["excused"]), summary["excused"]


def test_peer_pulsar_is_a_diff_target() -> None:
    """``--target peer:pulsar-4.0.7`` starts the standalone with its own launcher (not the RocketMQ ones), names its
    expectations, and replays a recorded divergence in agreement."""
    done = _mqtck("--replay", str(REPLAYS[0]), "--target", f"peer:{PEER}")
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"{PEER} ready after" in done.stderr and "agree on pulsar://127.0.0.1:" in done.stderr
