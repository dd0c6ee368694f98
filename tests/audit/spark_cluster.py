"""A Spark standalone cluster on loopback, started from the installed pyspark's own classes.

A master and N workers, each a JVM of ``org.apache.spark.deploy.{master.Master,worker.Worker}`` on the
jars pyspark ships, in a temp dir, bound to 127.0.0.1. Each worker runs in its own process group, so that
killing the group (``kill_worker``) takes the worker and the executors it launched, as the loss of a
machine would. What a user of ``mqtck audit --master spark://…`` runs against, started by the test that
needs it (docs/audit.md, On a cluster).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from conformance.peers.rocketmq import free_port

HOST = "127.0.0.1"
#: Each worker's share of the machine: one core, enough memory for one executor of WORKER_MEMORY.
WORKER_CORES = 1
WORKER_MEMORY = "1g"
#: How long the master and the workers may take to come up.
START_TIMEOUT_S = 60.0


@dataclass
class StandaloneCluster:
    """The running cluster: its master URL, the master's JSON status and its workers' processes."""

    url: str
    ui_port: int
    dir: Path
    master: subprocess.Popen[bytes]
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def status(self) -> dict:  # type: ignore[type-arg]
        """The master's status page as JSON: workers (with their state), active and completed apps."""
        with urllib.request.urlopen(f"http://{HOST}:{self.ui_port}/json/", timeout=5) as answer:
            return json.loads(answer.read())  # type: ignore[no-any-return]

    def alive_workers(self) -> int:
        return sum(1 for w in self.status().get("workers", []) if w.get("state") == "ALIVE")

    def kill_worker(self, index: int) -> None:
        """SIGKILL the worker and every executor it launched (its process group)."""
        os.killpg(self.workers[index].pid, signal.SIGKILL)
        self.workers[index].wait()


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _jvm(main: str, *args: str, log: Path) -> subprocess.Popen[bytes]:
    java = shutil.which("java")
    if java is None:
        raise RuntimeError("java is not on PATH")
    home = _spark_home()
    # A worker builds its executors' command line with Spark's launcher, which needs the Scala version and
    # finds it only in a source build's directories unless SPARK_SCALA_VERSION says it (pip's pyspark has none).
    (launcher,) = (home / "jars").glob("spark-launcher_*.jar")
    scala = launcher.name.split("_", 1)[1].split("-", 1)[0]
    env = dict(os.environ, SPARK_HOME=str(home), SPARK_LOCAL_IP=HOST, PYSPARK_PYTHON=sys.executable,
               SPARK_SCALA_VERSION=scala)
    cmd = [java, "-Xmx256m", "-cp", f"{home / 'jars'}/*", main, *args]
    with log.open("wb") as out:
        return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=log.parent,
                                start_new_session=True)


@contextmanager
def standalone_cluster(workers: int = 2) -> Iterator[StandaloneCluster]:
    """Start a master and ``workers`` workers; stop all of them (and the temp dir) on the way out."""
    root = Path(tempfile.mkdtemp(prefix="mqtck-spark-cluster-"))
    port, ui_port = free_port(HOST), free_port(HOST)
    master = _jvm("org.apache.spark.deploy.master.Master", "--host", HOST, "--port", str(port),
                  "--webui-port", str(ui_port), log=root / "master.log")
    cluster = StandaloneCluster(f"spark://{HOST}:{port}", ui_port, root, master)
    try:
        for n in range(workers):
            work = root / f"worker-{n}"
            work.mkdir()
            cluster.workers.append(_jvm(
                "org.apache.spark.deploy.worker.Worker", cluster.url, "--host", HOST, "--cores", str(WORKER_CORES),
                "--memory", WORKER_MEMORY, "--webui-port", str(free_port(HOST)), "--work-dir", str(work),
                log=root / f"worker-{n}.log"))
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                if cluster.alive_workers() == workers:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or master.poll() is not None:
                logs = (root / "master.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"the Spark cluster did not come up within {START_TIMEOUT_S} s: {logs}")
            time.sleep(0.5)
        yield cluster
    finally:
        for proc in (*cluster.workers, master):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        shutil.rmtree(root, ignore_errors=True)
