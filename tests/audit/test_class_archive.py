"""The driver JVM's class-data archive (conformance/audit/class_archive.py): when it is written, when it is
mapped, and that a real driver writes one at exit and the next driver maps it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance.audit import class_archive

ROOT = Path(__file__).resolve().parents[2]
FLAGS = ("-XX:+UseParallelGC",)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MQTCK_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("MQTCK_SPARK_CDS", raising=False)
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    return tmp_path


def _needs_jdk() -> None:
    if class_archive.archive_key(FLAGS) is None:
        pytest.skip("no JDK with a base CDS archive, or no pyspark")


def test_no_archive_yet_asks_the_jvm_to_write_one_and_finishes_it_at_exit(cache, monkeypatch):
    _needs_jdk()
    registered = []
    monkeypatch.setattr(class_archive.atexit, "register", lambda *a: registered.append(a))
    options = class_archive.driver_options(FLAGS)
    assert options[0].startswith("-XX:ArchiveClassesAtExit=") and options[0].endswith(".partial")
    assert class_archive.QUIET in options
    (finish, partial, archive), = registered
    assert finish is class_archive._finish and Path(options[0].split("=", 1)[1]) == partial
    assert archive.parent == cache and archive.suffix == ".jsa"


def test_an_archive_is_mapped_and_a_stale_partial_one_removed(cache, monkeypatch):
    _needs_jdk()
    archive = cache / f"spark-driver-{class_archive.archive_key(FLAGS)}.jsa"
    archive.write_bytes(b"x")
    assert class_archive.driver_options(FLAGS) == (f"-XX:SharedArchiveFile={archive}", class_archive.QUIET)
    # A different flag set is a different archive.
    assert class_archive.archive_key(FLAGS) != class_archive.archive_key((*FLAGS, "-Xss16m"))
    archive.unlink()
    stale, fresh = cache / "a.jsa.1.partial", cache / "a.jsa.2.partial"
    for f in (stale, fresh):
        f.write_bytes(b"x")
    old = time.time() - 3 * class_archive.DUMP_TIMEOUT_S
    os.utime(stale, (old, old))
    monkeypatch.setattr(class_archive.atexit, "register", lambda *a: None)
    class_archive.driver_options(FLAGS)
    assert not stale.exists() and fresh.exists()


def test_off_under_spark_submit_or_without_a_base_archive(cache, monkeypatch, tmp_path):
    monkeypatch.setenv("MQTCK_SPARK_CDS", "0")
    assert class_archive.driver_options(FLAGS) == ()
    monkeypatch.delenv("MQTCK_SPARK_CDS")
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "1")
    assert class_archive.driver_options(FLAGS) == ()
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT")
    jdk = tmp_path / "jdk"
    (jdk / "bin").mkdir(parents=True)
    (jdk / "bin" / "java").write_text("")
    monkeypatch.setenv("JAVA_HOME", str(jdk))  # a JDK without lib/server/classes.jsa: a dump would not start
    assert class_archive.archive_key(FLAGS) is None and class_archive.driver_options(FLAGS) == ()


DRIVER = """
import subprocess, sys
from conformance.audit.session import SparkSettings, spark_session
spark = spark_session(SparkSettings(input_bytes=0))
jvm = spark.sparkContext._jvm
pid = jvm.java.lang.ProcessHandle.current().pid()
info = subprocess.run(["jcmd", str(pid), "VM.info"], capture_output=True, text=True).stdout
mapped = [line for line in info.splitlines() if line.startswith("CDS archive(s) mapped at")]
print("COUNT", spark.range(1000).filter("id % 7 = 0").count())
print("MAPPED", mapped[0] if mapped else "none")
"""


@pytest.mark.skipif(shutil.which("jcmd") is None, reason="jcmd (the JDK's) is needed to see what the JVM mapped")
def test_a_driver_writes_the_archive_at_exit_and_the_next_driver_maps_it(tmp_path):
    _needs_jdk()
    env = {**os.environ, "MQTCK_CACHE_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    env.pop("MQTCK_SPARK_CDS", None)
    env.pop("PYSPARK_GATEWAY_PORT", None)
    first = subprocess.run([sys.executable, "-c", DRIVER], env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    assert "COUNT 143" in first.stdout and "[warning][cds]" not in first.stdout  # the dump's warnings are off
    assert "writing the Spark driver's class archive" in first.stderr
    archives = list(tmp_path.glob("*.jsa"))
    assert len(archives) == 1 and not list(tmp_path.glob("*.partial"))
    size = archives[0].stat().st_size
    assert size > 20 * 1024 * 1024  # Spark's classes, not only the JDK's
    second = subprocess.run([sys.executable, "-c", DRIVER], env=env, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr
    assert "COUNT 143" in second.stdout and "writing" not in second.stderr
    mapped = re.search(r"size (\d+)", second.stdout)
    assert mapped is not None, second.stdout
    assert int(mapped.group(1)) >= size  # the JDK's base archive and ours, mapped


def test_writing_an_archive_keeps_only_the_newest(tmp_path):
    for i in range(class_archive.KEEP_ARCHIVES + 2):
        archive = tmp_path / f"spark-driver-{i}.jsa"
        archive.write_bytes(b"x")
        os.utime(archive, (1_000_000 + i, 1_000_000 + i))
    (tmp_path / "other.txt").write_text("not ours")
    class_archive._keep_newest(tmp_path)
    kept = sorted(p.name for p in tmp_path.glob("*.jsa"))
    assert kept == [f"spark-driver-{i}.jsa" for i in range(2, class_archive.KEEP_ARCHIVES + 2)]
    assert (tmp_path / "other.txt").exists()
