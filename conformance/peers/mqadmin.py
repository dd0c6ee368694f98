"""Apache RocketMQ's admin tool, mqadmin, run by name and version against any name server.

``rocketmq-tools`` is resolved from Maven Central through ``conformance/peers/mqadmin/pom.xml``
(:func:`conformance.peers.maven.mqadmin_classpath`) and its own main class,
``org.apache.rocketmq.tools.command.MQAdminStartup``, runs one sub-command per JVM, as a user's ``mqadmin``
script does. mqadmin reads its logging configuration from ``$ROCKETMQ_HOME/conf/logback_tools.xml`` and stops
with a stack trace without one, so :func:`tools_home` writes a minimal one (console warnings only) into a
temporary home: nothing of the distribution is needed or copied.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from conformance.peers.maven import mqadmin_classpath, require_tool

#: The version the issue measured (the admin tool of the 4.9 line the reference speaks).
MQADMIN_VERSION = "4.9.7"
MAIN_CLASS = "org.apache.rocketmq.tools.command.MQAdminStartup"
#: One sub-command's JVM, on a loaded machine.
COMMAND_TIMEOUT_S = 120.0
_LOGBACK = """<?xml version="1.0" encoding="UTF-8"?>
<configuration>
  <appender name="STDERR" class="ch.qos.logback.core.ConsoleAppender">
    <target>System.err</target>
    <encoder><pattern>%p %c{0} %m%n</pattern></encoder>
  </appender>
  <root level="WARN"><appender-ref ref="STDERR"/></root>
</configuration>
"""


@dataclass(frozen=True)
class AdminRun:
    """One sub-command's exit code and what it printed (stdout then stderr)."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def tools_home(base: Path) -> Path:
    """A ROCKETMQ_HOME holding only the logging configuration mqadmin insists on reading."""
    conf = base / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "logback_tools.xml").write_text(_LOGBACK, encoding="utf-8")
    return base


class MqAdmin:
    """mqadmin ``version`` pointed at the name server ``namesrv`` (``host:port``)."""

    def __init__(self, namesrv: str, home: Path, version: str = MQADMIN_VERSION) -> None:
        self.namesrv = namesrv
        self.home = tools_home(home)
        self.classpath = os.pathsep.join(mqadmin_classpath(version))
        self.java = require_tool("java", "mqadmin is a Java program")

    def run(self, command: str, *args: str, timeout_s: float = COMMAND_TIMEOUT_S) -> AdminRun:
        argv = [self.java, "-Xms64m", "-Xmx256m", f"-Drocketmq.home.dir={self.home}", "-cp", self.classpath,
                MAIN_CLASS, command, "-n", self.namesrv, *args]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False,
                              env={**os.environ, "ROCKETMQ_HOME": str(self.home)})
        return AdminRun((command, *args), done.returncode, done.stdout, done.stderr)
