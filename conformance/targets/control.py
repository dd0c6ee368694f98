"""The control channel: what the owner of a broker process offers the conformance suite, over HTTP.

Theory of operation
-------------------
A conformance test never reaches into a process it does not own (DESIGN.md, "Capabilities come from whoever
owns the process"). Whoever starts the broker — ``mqtck broker --remoting --control`` for the reference,
``mqtck peer run NAME`` for a real Apache RocketMQ broker — can restart it, make its retention run and knows
its store's segment sizes. It serves that knowledge on a small loopback HTTP server and advertises the target
as ``remoting://HOST:PORT?control=HOST:CPORT``; the ``remoting://`` target (``conformance.targets.remoting``)
asks it and declares what it offers as capabilities.

The contract (both sides live in this module, so that it is written down once):

``GET /capabilities``
    ``{"implementation": str, "capabilities": [...], "store": {"commitlog_segment_bytes": int,
    "consumequeue_segment_units": int, "clean_interval_ms": int, "disk_used_ratio": float}, "registry":
    {"channel_expired_timeout_ms": int, "channel_scan_interval_ms": int}}``. The capabilities
    a runner may offer are :data:`CONTROL_CAPABILITIES`: ``restart`` (a clean restart and a kill -9 restart,
    data kept), ``retention_expire`` (every commit-log segment but the one being written counts as expired and
    the clean service runs now), ``store_layout`` (the segment sizes in ``store`` are the broker's),
    ``broker_config`` (``POST /config`` changes the settings of :data:`BROKER_SETTINGS` at run time),
    ``manual_delete`` (``POST /retention/manual-delete``), ``torn_restart`` (``POST /restart/torn``) and
    ``trace`` (``GET /trace``: the broker's trace rows, schema v1, as the runner records them),
    ``clock_control`` (the broker runs on simulated time that moves only through ``POST /clock/advance``),
    ``race_control`` (``POST /race/pull``) and ``retention_control`` (``POST /retention/run``).
    ``clean_interval_ms`` (how often the clean service runs), ``disk_used_ratio`` (how full the store's
    disk is now, in [0, 1]) and ``registry`` (when silent consumer channels expire) are optional. Any other
    name is ignored by the client.
``GET /trace?from=N``
    ``{"rows": [...], "first": F, "next": M}``: the rows numbered N on that the runner still holds (F is the
    number of the first; F > N when older rows were dropped), and the number the next row will get.
``POST /restart`` with ``{"kill": bool}``
    ``200 {"ok": true}`` once the broker serves again and is registered with its name server, at the same
    broker address. Existing connections may be dropped; the client reconnects.
``POST /restart/torn`` with ``{"commit_log_offset": N}``
    ``200 {"ok": true}``: the broker is killed (as SIGKILL), the record at commit-log offset N is torn (its magic
    overwritten, as a write cut short leaves it) and the broker restarts on that data, recovering as after a
    crash; 500 naming the offset if no record starts there.
``POST /retention/expire``
    ``200 {"ok": true, "deleted_commitlog_segments": n}`` once the clean (commit log, consume queues, min
    offsets) has finished. It leaves no trigger behind (no manual delete request is left pending).
``POST /config`` with ``{"settings": {NAME: value, ...}}``
    ``200 {"ok": true, "previous": {NAME: value, ...}}`` once the broker uses the new values: RocketMQ's own
    property names and meanings (``UPDATE_BROKER_CONFIG``), the ones of :data:`BROKER_SETTINGS` only;
    ``previous`` holds the values they replaced, for the caller to put back.
``POST /retention/manual-delete``
    ``200 {"ok": true}``: as RocketMQ's ``DELETE_EXPIRED_COMMITLOG``, the next clean runs (20) delete expired
    segments whatever the hour or disk usage.
``POST /retention/run``
    ``200 {"ok": true}`` once a clean run made now, as after a manual delete request (whatever the hour or disk
    usage), has finished: only segments past fileReservedTime on the broker's own clock go, so messages as
    young as they are stay (RETAIN-1). Unlike ``/retention/expire`` it expires nothing itself: it is what the
    in-process reference's ``run_retention`` does, so a lockstep diff can run the same clean on both sides.
``POST /clock/advance`` with ``{"ms": N}``
    ``200 {"ok": true, "now_ms": T, "answered": k}``: simulated time moved up to N ms forward, the broker's
    timers due on the way fired, stopping early at the first instant at which held requests (pulls, pops) were
    answered: T is that instant (or the end), k how many were answered then. A client that cannot see when an
    answer was written over the wire learns it so, and measures a hold exactly, as in-process.
``POST /race/pull`` with ``{"topic": str, "queue_id": N, "sends": [{"body": base64, "tags": str | null}, ...]}``
    ``200 {"ok": true}``: the next pull of that queue that finds nothing and would be held gets those messages
    stored after its lookup and before its hold (RocketMQ issue #7358's interleaving); 1 to
    :data:`MAX_RACED_SENDS` sends.
Errors
    a 4xx or 5xx status with ``{"error": "one line"}``.

Restart and expire act on the whole broker: a suite that uses them must have the broker to itself (one
worker, as ``mqtck conform`` runs by default).

Server side: :func:`serve_control` runs a :class:`BrokerControl` behind that HTTP API on a background thread
(stdlib ``http.server``: no event loop of its own, so a synchronous runner and an asyncio one can both use it;
an asyncio runner's control hops onto its loop itself). One operation runs at a time. Client side:
:class:`ControlClient`.
"""

from __future__ import annotations

import base64
import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol, TypeGuard
from urllib.parse import parse_qs

import httpx

log = logging.getLogger("mqtck.control")

#: What a runner may offer through the channel (each is also a target capability, ``conformance.targets``).
CONTROL_CAPABILITIES = frozenset(
    {"restart", "retention_expire", "store_layout", "broker_config", "manual_delete", "trace", "torn_restart",
     "clock_control", "race_control", "retention_control", "fresh_store"}
)
#: The ``store`` keys, each a positive integer.
STORE_KEYS = ("commitlog_segment_bytes", "consumequeue_segment_units")
#: The optional ``registry`` keys (ms), each a positive integer: how the broker expires silent consumer channels.
REGISTRY_KEYS = ("channel_expired_timeout_ms", "channel_scan_interval_ms")
#: The broker settings ``POST /config`` may change, by RocketMQ's property names (BrokerConfig and
#: MessageStoreConfig), with the rule a value must meet: ``longPollingEnable`` (arrivals wake held pulls; off:
#: short polling), ``deleteWhen`` (the hours of the clean runs, "04" or "04;16"; UTC at the reference and at
#: the peers mqtck launches), ``fileReservedTime`` (hours a segment is kept) and ``diskMaxUsedSpaceRatio``
#: (percent of disk usage that triggers deletion at any hour; RocketMQ reads it clamped to [10, 95]) and
#: ``accessMessageInMemoryMaxRatio`` (percent of physical memory behind the commit log's end that is "in memory";
#: 0 puts every message in disk, so the in-disk batch limits show on any machine) and ``enablePopBufferMerge``
#: (POP checkpoints and acks matched in memory first; RocketMQ's default is off, the reference's on) and
#: ``autoCreateSubscriptionGroup`` (a group the broker does not know is created on first use; on by default: off, a
#: deleted group stays deleted, so its pops are refused and its due checkpoints skipped).
BROKER_SETTINGS: dict[str, str] = {
    "longPollingEnable": "true or false",
    "deleteWhen": "hours 00-23 joined by ';'",
    "fileReservedTime": "an integer >= 0",
    "diskMaxUsedSpaceRatio": "an integer in [10, 95]",
    "accessMessageInMemoryMaxRatio": "an integer in [0, 100]",
    "enablePopBufferMerge": "true or false",
    "autoCreateSubscriptionGroup": "true or false",
}
#: The settings whose value is true or false (a runner reads them back from RocketMQ's text properties as such).
BOOLEAN_SETTINGS = frozenset(name for name, rule in BROKER_SETTINGS.items() if rule == "true or false")
#: How long the client waits for ``GET /capabilities`` (a runner answers it at once).
PROBE_TIMEOUT_S = 5.0
#: How long the client waits for a restart or an expire: a JVM broker may take tens of seconds to come back.
OPERATION_TIMEOUT_S = 180.0
#: Largest request body the server reads.
MAX_BODY_BYTES = 4096
#: The ``POST`` paths.
OPERATIONS = ("/restart", "/restart/torn", "/restart/fresh", "/retention/expire", "/config", "/retention/manual-delete",
              "/retention/run", "/clock/advance", "/race/pull")
#: At most this many messages a race stores.
MAX_RACED_SENDS = 32
#: The longest single ``POST /clock/advance``: a year of simulated time.
MAX_ADVANCE_MS = 366 * 24 * 3_600_000


class BrokerControl(Protocol):
    """What a runner implements; :func:`serve_control` calls it from its HTTP thread, one call at a time. A
    runner that records its broker's trace also has ``trace_since(start) -> (rows, first, next)`` (the rows
    numbered ``start`` on, the number of the first of them, the number of the next row) and offers ``trace``; one
    on simulated time has ``advance(ms) -> (now_ms, answered)`` and offers ``clock_control``; one that places
    races has ``race_pull(topic, queue_id, sends)`` and offers ``race_control``; one that runs its clean service
    on request has ``run_retention()`` and offers ``retention_control``; one that can start its broker on an empty
    store has ``fresh_restart()`` and offers ``fresh_store``."""

    def describe(self) -> dict[str, Any]:
        """The ``GET /capabilities`` document."""
        ...

    def restart(self, kill: bool) -> None:
        """Restart the broker on the same data: shut down cleanly, or (``kill``) as SIGKILL leaves it. Return
        once it serves again at the same address and is registered with its name server."""
        ...

    def expire_and_clean(self) -> int:
        """Treat every commit-log segment but the one being written as expired, run the clean service now
        (commit log, consume queues, min offsets) and return once it finished: how many commit-log segments
        were deleted."""
        ...

    def configure(self, settings: dict[str, Any]) -> dict[str, Any]:
        """Apply checked :data:`BROKER_SETTINGS` to the running broker; return the values they replaced."""
        ...

    def manual_delete(self) -> None:
        """Ask the broker for a manual delete (RocketMQ's DELETE_EXPIRED_COMMITLOG)."""
        ...

    def tear_and_restart(self, commit_log_offset: int) -> None:
        """Kill the broker, tear the record at ``commit_log_offset`` and restart it on that data (ValueError when
        no record starts there); return once it serves again, registered with its name server."""
        ...


class ControlError(Exception):
    """The control channel refused or failed an operation (the message is one line)."""


@dataclass(frozen=True)
class ControlDescription:
    """A checked ``GET /capabilities`` answer."""

    implementation: str
    capabilities: frozenset[str]
    commitlog_segment_bytes: int | None
    consumequeue_segment_units: int | None
    #: How often the broker's clean service runs (None: not said; RocketMQ's default is 10 s).
    clean_interval_ms: int | None = None
    #: How full the store's disk was when asked, in [0, 1] (None: not said).
    disk_used_ratio: float | None = None
    #: channelExpiredTimeout and the housekeeping scan's interval, ms (None: not said).
    channel_expired_timeout_ms: int | None = None
    channel_scan_interval_ms: int | None = None
    #: The commit log's end and the offset up to which it is on the device, when asked (None: not said). Past the
    #: flushed offset lies what a machine crash would lose: the ASYNC flush's loss window.
    commitlog_max_offset: int | None = None
    commitlog_flushed_offset: int | None = None


def check_settings(doc: object) -> dict[str, Any]:
    """Validate a ``POST /config`` body's ``settings`` (ValueError naming the field and the rule)."""
    if not isinstance(doc, dict) or not doc:
        raise ValueError("settings: must be a non-empty object of broker settings")
    for name, value in doc.items():
        rule = BROKER_SETTINGS.get(name)
        if rule is None:
            raise ValueError(f"settings.{name}: not a setting this channel changes ({', '.join(BROKER_SETTINGS)})")
        if not _setting_ok(name, value):
            raise ValueError(f"settings.{name}: must be {rule}, got {value!r}")
    return dict(doc)


def check_race(doc: dict[str, Any]) -> tuple[str, int, list[tuple[bytes, str | None]]]:
    """Validate a ``POST /race/pull`` body (ValueError naming the field and the rule)."""
    topic, queue_id, sends = doc.get("topic"), doc.get("queue_id"), doc.get("sends")
    if not isinstance(topic, str) or not topic:
        raise ValueError("topic: must be a non-empty string")
    if isinstance(queue_id, bool) or not isinstance(queue_id, int) or queue_id < 0:
        raise ValueError(f"queue_id: must be an integer >= 0, got {queue_id!r}")
    if not isinstance(sends, list) or not 1 <= len(sends) <= MAX_RACED_SENDS:
        raise ValueError(f"sends: must be a list of 1 to {MAX_RACED_SENDS} messages")
    out: list[tuple[bytes, str | None]] = []
    for i, send in enumerate(sends):
        body = send.get("body") if isinstance(send, dict) else None
        tags = send.get("tags") if isinstance(send, dict) else None
        try:
            raw = base64.b64decode(body, validate=True) if isinstance(body, str) else None
        except ValueError:
            raw = None
        if raw is None:
            raise ValueError(f"sends[{i}].body: must be base64 text")
        if tags is not None and not isinstance(tags, str):
            raise ValueError(f"sends[{i}].tags: must be a string or null")
        out.append((raw, tags))
    return topic, queue_id, out


def _count(value: object) -> TypeGuard[int]:
    """A JSON integer >= 0 (``true`` is not one, although Python's bool is an int)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _setting_ok(name: str, value: object) -> bool:
    if name in BOOLEAN_SETTINGS:
        return isinstance(value, bool)
    if name == "deleteWhen":
        return isinstance(value, str) and all(p.isascii() and p.isdigit() and 0 <= int(p) <= 23
                                              for p in value.split(";"))
    if isinstance(value, bool) or not isinstance(value, int):
        return False
    if name == "fileReservedTime":
        return value >= 0
    return 0 <= value <= 100 if name == "accessMessageInMemoryMaxRatio" else 10 <= value <= 95


def _section(doc: dict[str, Any], name: str) -> dict[str, Any]:
    section = doc.get(name, {})
    if not isinstance(section, dict):
        raise ValueError(f"{name}: must be an object")
    return section


def _positive_ints(name: str, section: dict[str, Any], keys: tuple[str, ...]) -> dict[str, int | None]:
    """The section's ``keys``, each absent (None) or an integer > 0 (ValueError naming ``name.key`` otherwise)."""
    out: dict[str, int | None] = {}
    for key in keys:
        value = section.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
            raise ValueError(f"{name}.{key}: must be an integer > 0, got {value!r}")
        out[key] = value
    return out


def check_description(doc: object) -> ControlDescription:
    """Validate a ``GET /capabilities`` document (ValueError naming the field); unknown capabilities are
    dropped, and ``store_layout`` needs both ``store`` sizes."""
    if not isinstance(doc, dict):
        raise ValueError("the document must be a JSON object")
    implementation = doc.get("implementation")
    if not isinstance(implementation, str) or not implementation:
        raise ValueError("implementation: must be a non-empty string")
    caps = doc.get("capabilities")
    if not isinstance(caps, list) or not all(isinstance(c, str) for c in caps):
        raise ValueError("capabilities: must be a list of strings")
    store, registry = _section(doc, "store"), _section(doc, "registry")
    sizes = _positive_ints("store", store, (*STORE_KEYS, "clean_interval_ms"))
    timing = _positive_ints("registry", registry, REGISTRY_KEYS)
    ratio = store.get("disk_used_ratio")
    if ratio is not None and (isinstance(ratio, bool) or not isinstance(ratio, int | float) or not 0 <= ratio <= 1):
        raise ValueError(f"store.disk_used_ratio: must be a number in [0, 1], got {ratio!r}")
    offsets: dict[str, int | None] = {}
    for key in ("commitlog_max_offset", "commitlog_flushed_offset"):
        value = store.get(key)
        if value is not None and not _count(value):
            raise ValueError(f"store.{key}: must be an integer >= 0, got {value!r}")
        offsets[key] = value
    offered = frozenset(caps) & CONTROL_CAPABILITIES
    if "store_layout" in offered and any(sizes[key] is None for key in STORE_KEYS):
        raise ValueError(f"store: store_layout is offered but store lacks {', '.join(STORE_KEYS)}")
    return ControlDescription(implementation, offered, sizes["commitlog_segment_bytes"],
                              sizes["consumequeue_segment_units"], sizes["clean_interval_ms"],
                              None if ratio is None else float(ratio), timing["channel_expired_timeout_ms"],
                              timing["channel_scan_interval_ms"], offsets["commitlog_max_offset"],
                              offsets["commitlog_flushed_offset"])


# -- server ------------------------------------------------------------------------------------------------
class ControlServer:
    """A running control channel: ``address`` is ``HOST:PORT``; ``stop()`` ends it (idempotent)."""

    def __init__(self, httpd: ThreadingHTTPServer, thread: threading.Thread) -> None:
        self._httpd = httpd
        self._thread = thread
        host, port = httpd.server_address[:2]
        self.address = f"{host!s}:{port}"
        self._stopped = False

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


def _ok(action: Callable[[], object]) -> Callable[[], dict[str, Any]]:
    """An operation whose answer is ``{"ok": true}`` once ``action`` returned."""

    def run() -> dict[str, Any]:
        action()
        return {"ok": True}

    return run


class _ControlHTTPServer(ThreadingHTTPServer):
    """The HTTP server of one control channel: what its handlers share is the runner's ``control`` and the lock
    that runs one operation at a time."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], control: BrokerControl) -> None:
        super().__init__(address, _ControlHandler)
        self.control = control
        self.lock = threading.Lock()


class _ControlHandler(BaseHTTPRequestHandler):
    """One request to the channel: checks its input (400 naming the field), runs the operation under the
    server's lock (500 with one line if it fails) and answers JSON."""

    server: _ControlHTTPServer
    server_version = "mqtck-control/1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        log.debug("control %s: " + format, self.address_string(), *args)

    def _answer(self, status: int, doc: dict[str, Any]) -> None:
        data = json.dumps(doc).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, text: str) -> None:
        self._answer(status, {"error": " ".join(text.split()) or "error"})

    def _body(self) -> dict[str, Any] | None:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_BODY_BYTES:
            self._error(400, f"body: Content-Length must be in [0, {MAX_BODY_BYTES}]")
            return None
        raw = self.rfile.read(length) if length else b"{}"
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._error(400, "body: must be JSON")
            return None
        if not isinstance(body, dict):
            self._error(400, "body: must be a JSON object")
            return None
        return body

    def _run(self, operation: str, call: Callable[[], dict[str, Any]]) -> None:
        with self.server.lock:
            try:
                result = call()
            except Exception as exc:  # noqa: BLE001 - every failure becomes a 500 with one line
                log.warning("control %s failed: %s: %s", operation, exc.__class__.__name__, exc)
                self._error(500, f"{operation} failed: {exc.__class__.__name__}: {exc}")
                return
        self._answer(200, result)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        path, _, query = self.path.partition("?")
        trace_since = getattr(self.server.control, "trace_since", None)
        if path == "/trace" and trace_since is not None:
            start = parse_qs(query).get("from", ["0"])[-1]
            if not (start.isascii() and start.isdigit()):
                self._error(400, f"from: must be an integer >= 0, got {start!r}")
                return

            def trace() -> dict[str, Any]:
                rows, first, after = trace_since(int(start))
                return {"rows": rows, "first": first, "next": after}

            self._run("trace", trace)
            return
        if path != "/capabilities":
            self._error(404, f"no such resource {self.path!r}: GET /capabilities or /trace")
            return
        self._run("describe", self.server.control.describe)

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self._body()
        if body is None:
            return
        path = self.path.split("?", 1)[0]
        operation = _POST_OPERATIONS.get(path)
        optional = _OPTIONAL_OPERATIONS.get(path)
        if operation is None or (optional is not None and getattr(self.server.control, optional, None) is None):
            self._error(404, f"no such operation {self.path!r}: POST {', '.join(OPERATIONS)}")
            return
        operation(self, body)

    # -- the POST operations: each checks its body, then runs -----------------------------------------------
    def _restart(self, body: dict[str, Any]) -> None:
        kill = body.get("kill", False)
        if not isinstance(kill, bool):
            self._error(400, f"kill: must be true or false, got {kill!r}")
            return
        self._run("restart", _ok(lambda: self.server.control.restart(kill)))

    def _torn_restart(self, body: dict[str, Any]) -> None:
        offset = body.get("commit_log_offset")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            self._error(400, f"commit_log_offset: must be an integer >= 0, got {offset!r}")
            return
        self._run("torn restart", _ok(lambda: self.server.control.tear_and_restart(offset)))

    def _fresh_restart(self, _: dict[str, Any]) -> None:
        self._run("fresh restart", _ok(self.server.control.fresh_restart))  # type: ignore[attr-defined]

    def _expire(self, _: dict[str, Any]) -> None:
        control = self.server.control
        self._run("expire", lambda: {"ok": True, "deleted_commitlog_segments": int(control.expire_and_clean())})

    def _config(self, body: dict[str, Any]) -> None:
        try:
            settings = check_settings(body.get("settings"))
        except ValueError as exc:
            self._error(400, str(exc))
            return
        self._run("config", lambda: {"ok": True, "previous": self.server.control.configure(settings)})

    def _manual_delete(self, _: dict[str, Any]) -> None:
        self._run("manual delete", _ok(self.server.control.manual_delete))

    def _run_retention(self, _: dict[str, Any]) -> None:
        self._run("retention run", _ok(self.server.control.run_retention))  # type: ignore[attr-defined]

    def _advance(self, body: dict[str, Any]) -> None:
        ms = body.get("ms")
        if isinstance(ms, bool) or not isinstance(ms, int) or not 0 <= ms <= MAX_ADVANCE_MS:
            self._error(400, f"ms: must be an integer in [0, {MAX_ADVANCE_MS}], got {ms!r}")
            return
        advance_clock = self.server.control.advance  # type: ignore[attr-defined]

        def advance() -> dict[str, Any]:
            now, answered = advance_clock(ms)
            return {"ok": True, "now_ms": int(now), "answered": int(answered)}

        self._run("advance", advance)

    def _race(self, body: dict[str, Any]) -> None:
        try:
            topic, queue_id, sends = check_race(body)
        except ValueError as exc:
            self._error(400, str(exc))
            return
        race_pull = self.server.control.race_pull  # type: ignore[attr-defined]
        self._run("race", _ok(lambda: race_pull(topic, queue_id, sends)))


#: What each ``POST`` path runs (:data:`OPERATIONS` lists them for the 404).
_POST_OPERATIONS: dict[str, Callable[[_ControlHandler, dict[str, Any]], None]] = {
    "/restart": _ControlHandler._restart,
    "/retention/expire": _ControlHandler._expire,
    "/config": _ControlHandler._config,
    "/restart/torn": _ControlHandler._torn_restart,
    "/restart/fresh": _ControlHandler._fresh_restart,
    "/retention/manual-delete": _ControlHandler._manual_delete,
    "/retention/run": _ControlHandler._run_retention,
    "/clock/advance": _ControlHandler._advance,
    "/race/pull": _ControlHandler._race,
}
#: The ``POST`` paths served only by a runner that has the method named (see :class:`BrokerControl`): 404 otherwise.
_OPTIONAL_OPERATIONS = {
    "/restart/fresh": "fresh_restart", "/retention/run": "run_retention", "/clock/advance": "advance",
    "/race/pull": "race_pull",
}


def serve_control(control: BrokerControl, host: str = "127.0.0.1", port: int = 0) -> ControlServer:
    """Serve ``control`` on ``host:port`` (0: a free port) from a daemon thread; returns at once."""
    httpd = _ControlHTTPServer((host, port), control)
    thread = threading.Thread(target=httpd.serve_forever, name="mqtck-control", daemon=True)
    thread.start()
    return ControlServer(httpd, thread)


# -- client ------------------------------------------------------------------------------------------------
class ControlClient:
    """The suite's side of the channel at ``address`` (``HOST:PORT``)."""

    def __init__(self, address: str) -> None:
        self.address = address
        self._base = f"http://{address}"

    def describe(self) -> ControlDescription:
        """``GET /capabilities``, checked; ControlError if it cannot be had."""
        try:
            response = httpx.get(f"{self._base}/capabilities", timeout=PROBE_TIMEOUT_S)
        except httpx.HTTPError as exc:
            raise ControlError(f"control channel {self.address}: {exc.__class__.__name__}: {exc}") from None
        doc = self._json(response, "GET /capabilities")
        try:
            return check_description(doc)
        except ValueError as exc:
            raise ControlError(f"control channel {self.address}: GET /capabilities: {exc}") from None

    def restart(self, kill: bool) -> None:
        self._post("/restart", {"kill": kill})

    def expire(self) -> int:
        """``POST /retention/expire``: how many commit-log segments the clean deleted."""
        doc = self._post("/retention/expire", {})
        deleted = doc.get("deleted_commitlog_segments")
        if isinstance(deleted, bool) or not isinstance(deleted, int) or deleted < 0:
            raise ControlError(f"control channel {self.address}: POST /retention/expire: "
                               f"deleted_commitlog_segments must be an integer >= 0, got {deleted!r}")
        return deleted

    def configure(self, settings: dict[str, Any]) -> dict[str, Any]:
        """``POST /config``: the previous values of the settings changed."""
        doc = self._post("/config", {"settings": settings})
        previous = doc.get("previous")
        if not isinstance(previous, dict) or set(previous) != set(settings):
            raise ControlError(f"control channel {self.address}: POST /config: previous must name the settings "
                               f"changed ({', '.join(settings)}), got {previous!r}")
        return previous

    def manual_delete(self) -> None:
        self._post("/retention/manual-delete", {})

    def run_retention(self) -> None:
        """``POST /retention/run``: a manual clean run now, on messages as old as they are."""
        self._post("/retention/run", {})

    def tear_and_restart(self, commit_log_offset: int) -> None:
        self._post("/restart/torn", {"commit_log_offset": commit_log_offset})

    def fresh_restart(self) -> None:
        """``POST /restart/fresh``: the broker killed and started again on an empty store."""
        self._post("/restart/fresh", {})

    def advance(self, ms: int) -> tuple[int, int]:
        """``POST /clock/advance``: (the simulated time now, the held requests answered at that instant)."""
        doc = self._post("/clock/advance", {"ms": ms})
        now, answered = doc.get("now_ms"), doc.get("answered")
        if not (_count(now) and _count(answered)):
            raise ControlError(f"control channel {self.address}: POST /clock/advance: now_ms and answered must be "
                               f"integers >= 0, got {now!r} and {answered!r}")
        return now, answered

    def race_pull(self, topic: str, queue_id: int, sends: list[tuple[bytes, str | None]]) -> None:
        """``POST /race/pull``: the next held pull of the queue gets ``sends`` stored before its hold."""
        self._post("/race/pull", {"topic": topic, "queue_id": queue_id, "sends": [
            {"body": base64.b64encode(body).decode("ascii"), "tags": tags} for body, tags in sends]})

    def trace(self, start: int) -> tuple[list[dict[str, Any]], int]:
        """``GET /trace?from=start``: (the rows, the number the next row will get)."""
        try:
            response = httpx.get(f"{self._base}/trace", params={"from": start}, timeout=OPERATION_TIMEOUT_S)
        except httpx.HTTPError as exc:
            raise ControlError(f"control channel {self.address}: GET /trace: {exc.__class__.__name__}: {exc}") from None
        doc = self._json(response, "GET /trace")
        rows, first, after = doc.get("rows"), doc.get("first"), doc.get("next")
        if not isinstance(rows, list) or not isinstance(first, int) or not isinstance(after, int):
            raise ControlError(f"control channel {self.address}: GET /trace: rows, first and next are required")
        if first > start:
            raise ControlError(f"control channel {self.address}: GET /trace: rows {start}..{first - 1} were dropped "
                               "before they were read")
        return rows, after

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            response = httpx.post(f"{self._base}{path}", json=body, timeout=OPERATION_TIMEOUT_S)
        except httpx.HTTPError as exc:
            raise ControlError(
                f"control channel {self.address}: POST {path}: {exc.__class__.__name__}: {exc}"
            ) from None
        return self._json(response, f"POST {path}")

    def _json(self, response: httpx.Response, what: str) -> dict[str, Any]:
        try:
            doc = response.json()
        except ValueError:
            doc = None
        if response.status_code >= 400:
            error = doc.get("error") if isinstance(doc, dict) else None
            raise ControlError(f"control channel {self.address}: {what}: {response.status_code} "
                               f"{error or response.text[:200]!s}")
        if not isinstance(doc, dict):
            raise ControlError(f"control channel {self.address}: {what}: the answer is not a JSON object")
        return doc
