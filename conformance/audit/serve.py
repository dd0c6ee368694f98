"""A warm Spark for repeated audits: Spark's own Spark Connect server (``SparkConnectServer``, shipped in pip's
pyspark), started with the audit driver's settings, so that ``mqtck audit --remote sc://HOST:PORT`` pays neither
the JVM's start nor its warm-up.

Why Spark Connect and not a server of our own: it is Spark's supported way to keep one driver for many clients,
the audit's DataFrame program runs on it unchanged (:mod:`conformance.audit.remote` answers the few calls that
differ), and a team that already runs a Connect server (or a cluster behind one) points ``--remote`` at it.

The server is a long-lived JVM: the JIT is the large audit's (C2 keeps compiling what every audit runs), and no
class archive is mapped (it starts once). Its default parallelism is set to the machine's cores so that the audit
sizes its shuffles as it does locally (a Connect client cannot read the SparkContext's).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from conformance.audit.engine import EngineUnavailable, engine_conf
from conformance.audit.session import LOCAL_MASTER, SparkSettings, SparkUnavailable, audit_conf, driver_java_options

#: Spark Connect's own default port.
DEFAULT_PORT = 15002
#: The server's class in pyspark's jars (spark-connect_2.13).
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
#: How long the server may take to listen (a cold JVM and Spark's start on a busy 2-core machine), seconds.
START_TIMEOUT_S = 180
#: How long a stopped server may take to exit before it is killed, seconds.
STOP_TIMEOUT_S = 30


@dataclass(frozen=True)
class ServeOptions:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    master: str = LOCAL_MASTER
    driver_memory: str = SparkSettings.driver_memory
    engine: str = "spark"

    @property
    def url(self) -> str:
        return f"sc://{self.host}:{self.port}"


def server_command(options: ServeOptions) -> list[str]:
    """The ``spark-submit`` command line of the Connect server (SparkUnavailable when pyspark or its server is
    missing, or the engine cannot run here)."""
    home = _spark_home()
    jars = list((home / "jars").glob("spark-connect_*.jar"))
    if not jars:
        raise SparkUnavailable(f"this pyspark has no Spark Connect server (no spark-connect jar in {home / 'jars'})")
    settings = SparkSettings(master=options.master, driver_memory=options.driver_memory, engine=options.engine)
    try:
        conf = {**audit_conf(settings, driver_java_options(short_lived=False, class_archive_too=False)),
                **engine_conf(options.engine)}
    except EngineUnavailable as exc:
        raise SparkUnavailable(str(exc)) from exc
    conf.update({
        "spark.app.name": "mqtck-spark-serve",
        "spark.connect.grpc.binding.address": options.host,
        "spark.connect.grpc.binding.port": str(options.port),
        "spark.default.parallelism": str(os.cpu_count() or 2),
    })
    command = [str(home / "bin" / "spark-submit"), "--class", SERVER_CLASS, "--master", options.master]
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    return [*command, "spark-internal"]


def serve(options: ServeOptions, on_ready: Callable[[str], None]) -> int:
    """Run the server until it exits or this process is asked to stop (SIGINT or SIGTERM: it is stopped and
    waited for). ``on_ready`` hears the URL once the server accepts connections. The server's exit status, 0 when
    stopped from here."""
    if _listening(options.host, options.port):
        raise SparkUnavailable(f"{options.host}:{options.port} is taken: another server listens there "
                               "(--port another)")
    proc = subprocess.Popen(server_command(options), start_new_session=True)
    stop_asked: list[float] = []

    def stop(signum: int, frame: object) -> None:
        # Only a signal to the server here: waiting for it inside the handler would contend with the main
        # thread's own wait for the same process.
        if not stop_asked:
            stop_asked.append(time.monotonic())
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not stop_asked and not _listening(options.host, options.port):
            if proc.poll() is not None:
                raise SparkUnavailable(f"the Spark Connect server exited at its start (status {proc.returncode}); "
                                       "its own lines above say why")
            if time.monotonic() > deadline:
                raise SparkUnavailable(f"the Spark Connect server did not listen on {options.host}:{options.port} "
                                       f"within {START_TIMEOUT_S} s")
            time.sleep(0.5)
        if not stop_asked:
            on_ready(options.url)
        while proc.poll() is None:
            time.sleep(0.5)
            if stop_asked and time.monotonic() - stop_asked[0] > STOP_TIMEOUT_S:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
        return 0 if stop_asked else proc.returncode
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _stop(proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop the server if it still runs (an error at its start), and wait for it."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _listening(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=1).close()
    except OSError:
        return False
    return True


def _spark_home() -> Path:
    try:
        import pyspark
    except ImportError as exc:
        raise SparkUnavailable("pyspark is not installed: pip install 'mqtck[spark]'") from exc
    return Path(os.environ.get("SPARK_HOME") or Path(pyspark.__file__).parent)
