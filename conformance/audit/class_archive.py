"""A class-data-sharing archive of the driver JVM's classes, so that an audit's JVM starts in about half the time.

Why: a small audit's fixed cost is mostly the JVM warming up. Spark's classes come from about 250 jars, and
every class the driver loads is looked up jar by jar (the JFR profile of a 20K-event audit had a sixth of the
planning thread's samples in ``ZipFile.getEntry``), then parsed and verified. A dynamic CDS archive
(JDK 13+, ``-XX:ArchiveClassesAtExit``) keeps the classes an audit loaded, already parsed and verified, in
one file the next JVM maps: measured on the 20K-event audit, the session start went from 3.9 s to 1.9 s and
the trace's load from 4.1 s to 2.6 s (docs/audit.md, Performance).

How: the first audit on a machine (for this pyspark, this ``java`` and these JVM flags) runs without an
archive and asks the JVM to write one when it exits; at the Python process's exit the driver is stopped, its
JVM is let go (end of its standard input, as when Python exits anyway) and waited for while it writes the
archive (about 10 s, once), which is then moved into place atomically. Every later audit maps it. The JVM
validates an archive against its own build and class path and ignores one that does not match, so a stale
archive costs the saving, never correctness; its key names the inputs that would make it stale, so a
changed installation writes a new one.

``MQTCK_SPARK_CDS=0`` turns this off; ``MQTCK_CACHE_DIR`` (default ``$XDG_CACHE_HOME/mqtck`` or
``~/.cache/mqtck``) says where archives are kept.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from conformance import interrupts

#: The JVM's own unified-logging tags for CDS off: a dump names every class it skips (signed jars, classes
#: generated at run time) as a warning on the JVM's standard output, which is the CLI's.
QUIET = "-Xlog:cds=off,cds+dynamic=off"
#: Archives kept in the cache directory (one per pyspark, JDK and flag set, about 190 MB each): writing a new
#: one removes the oldest beyond this.
KEEP_ARCHIVES = 3
#: How long the process's exit waits for the JVM to write the archive (measured: about 8 s for 188 MB).
DUMP_TIMEOUT_S = 120


def cache_dir() -> Path:
    explicit = os.environ.get("MQTCK_CACHE_DIR")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mqtck"


def java_home() -> Path | None:
    """The JDK Spark's launcher runs: ``$JAVA_HOME``, else the ``java`` on the path (as ``spark-class`` does)."""
    if os.environ.get("JAVA_HOME"):
        return Path(os.environ["JAVA_HOME"])
    java = shutil.which("java")
    return Path(java).resolve().parent.parent if java else None


def archive_key(jvm_flags: tuple[str, ...]) -> str | None:
    """What the archive depends on: the JDK (its path and its ``java``'s modification time), pyspark's
    version and jars, and the other JVM flags. None when there is no usable JDK with a base archive (a
    dynamic archive extends the JDK's own default one; without it the JVM would refuse to start)."""
    home = java_home()
    if home is None or not (home / "bin" / "java").exists() or not any(home.glob("lib/server/classes*.jsa")):
        return None
    try:
        import pyspark
    except ImportError:
        return None
    jars = Path(pyspark.__file__).parent / "jars"
    digest = hashlib.sha256()
    # The jars' directory too: the JVM checks the class path's paths, and each virtual environment has its own.
    for part in (str(home), str((home / "bin" / "java").stat().st_mtime_ns), pyspark.__version__, str(jars),
                 *sorted(p.name for p in jars.glob("*.jar")), *jvm_flags):
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()[:16]


def driver_options(jvm_flags: tuple[str, ...]) -> tuple[str, ...]:
    """Flags for the driver JVM about to start: map the archive if there is one, else write one at exit."""
    if os.environ.get("MQTCK_SPARK_CDS", "1") == "0" or "PYSPARK_GATEWAY_PORT" in os.environ:
        return ()  # turned off, or under spark-submit (the JVM has started already)
    key = archive_key(jvm_flags)
    if key is None:
        return ()
    archive = cache_dir() / f"spark-driver-{key}.jsa"
    if archive.is_file():
        return (f"-XX:SharedArchiveFile={archive}", QUIET)
    try:
        archive.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return ()
    _remove_stale(archive.parent)
    partial = archive.with_name(f"{archive.name}.{uuid.uuid4().hex}.partial")
    atexit.register(_finish, partial, archive)
    return (f"-XX:ArchiveClassesAtExit={partial}", QUIET)


def _remove_stale(directory: Path) -> None:
    """Delete archives being written by no one: a process killed, or ended without its exit handlers (as test
    workers may be), leaves its JVM to write a ``.partial`` that nothing moves into place."""
    cutoff = time.time() - 2 * DUMP_TIMEOUT_S
    for stale in directory.glob("*.partial"):
        with contextlib.suppress(OSError):
            if stale.stat().st_mtime < cutoff:
                stale.unlink()


def _keep_newest(directory: Path) -> None:
    """Remove all but the :data:`KEEP_ARCHIVES` newest archives: those of installations since replaced."""
    archives = sorted(directory.glob("spark-driver-*.jsa"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in archives[KEEP_ARCHIVES:]:
        with contextlib.suppress(OSError):
            old.unlink()


def _finish(partial: Path, archive: Path) -> None:
    """At exit: stop the driver, let its JVM go and wait while it writes the archive, then move it into place."""
    try:
        from pyspark import SparkContext

        gateway: Any = SparkContext._gateway
        context = SparkContext._active_spark_context
        if gateway is None or getattr(gateway, "proc", None) is None or interrupts.interrupted():
            return
        if context is not None:
            context.stop()
        print(f"mqtck: writing the Spark driver's class archive for faster starts (once): {archive}",
              file=sys.stderr, flush=True)
        gateway.proc.stdin.close()  # the JVM exits at the end of its input, and dumps as it exits
        gateway.proc.wait(timeout=DUMP_TIMEOUT_S)
        if partial.is_file() and partial.stat().st_size > 0:
            os.replace(partial, archive)
            _keep_newest(archive.parent)
    except (OSError, subprocess.TimeoutExpired, ImportError):
        pass
    finally:
        partial.unlink(missing_ok=True)
