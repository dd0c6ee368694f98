"""The project's single-file Java programs (client-check subjects, the strategy driver, probes), compiled once.

``java File.java`` (JEP 330) compiles the source in memory at every launch: about a second of CPU before the
program's ``main`` runs, more on a loaded machine (a client-check subject once took 8 s to register under CI's
load). :func:`java_program` compiles the file with ``javac`` into the peer cache instead, under a directory named
after the file and the hash of its source and classpath, and returns the arguments that run the compiled class;
later launches, in this process or another, reuse it. The source stays the only thing in the repository.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from conformance.peers.build import run_build
from conformance.peers.maven import cache_dir, require_tool

#: How long ``javac`` may take for one of the project's programs (a few hundred lines).
JAVAC_TIMEOUT_S = 300


def java_program(source: Path, classpath: list[str], what: str) -> list[str]:
    """``["-cp", CLASSES:CLASSPATH, MAIN]`` for ``java``: the single-file program ``source`` (its main class is
    named after the file), compiled against ``classpath`` into the peer cache unless a compilation of the same
    source and classpath is there; PeerError (naming ``what``) with javac's first error line when it fails."""
    javac = _javac(what)
    digest = hashlib.sha256(source.read_bytes())
    digest.update("\0".join([javac, *classpath]).encode())
    classes = cache_dir() / f"java-{source.stem}-{digest.hexdigest()[:12]}"
    if not (classes / f"{source.stem}.class").exists():
        _compile(javac, source, classpath, classes, what)
    return ["-cp", os.pathsep.join([str(classes), *classpath]), source.stem]


def _javac(what: str) -> str:
    """The ``javac`` of the JDK whose ``java`` is on PATH (the classes must run on that ``java``: a newer javac's
    class files would not), else the one on PATH."""
    java = shutil.which("java")
    if java is not None:
        beside = Path(java).resolve().parent / "javac"
        if beside.exists():
            return str(beside)
    return require_tool("javac", f"{what} is compiled with javac")


def _compile(javac: str, source: Path, classpath: list[str], classes: Path, what: str) -> None:
    """Into a fresh directory renamed to ``classes`` when complete: a concurrent compilation (another test
    worker) either finds the finished directory or finishes its own, and the first rename wins."""
    classes.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{classes.name}-", dir=classes.parent))
    try:
        # No annotation processing: javac would otherwise look for processors in every jar of the classpath.
        run_build([javac, "-proc:none", "-nowarn", "-encoding", "UTF-8", "-cp", os.pathsep.join(classpath),
                   "-d", str(staging), str(source)], step=f"javac of {what} ({source.name})", timeout_s=JAVAC_TIMEOUT_S)
        try:
            staging.rename(classes)
        except OSError:  # another process renamed its compilation there first
            if not (classes / f"{source.stem}.class").exists():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
