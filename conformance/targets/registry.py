"""The target kinds by address: parse a ``--target`` value, ask its capabilities, open it.

The one place that knows every adapter (:mod:`.reference`, :mod:`.http`, :mod:`.remoting`, :mod:`.pulsar`,
:mod:`.grpc`, and the seeded faults of :mod:`conformance.mutants`); the adapters know only the interface in
:mod:`conformance.targets`.
A new transport (gRPC, Pulsar) adds its scheme here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from conformance.mutants import CATALOGUE
from conformance.targets import CAPABILITIES, StoreLayout, Target
from conformance.targets.http import HttpTarget, probe
from conformance.targets.pulsar import PulsarTarget
from conformance.targets.reference import ReferenceTarget
from conformance.targets.remoting import RemotingTarget, control_capabilities, discover_broker, wire_capabilities


@dataclass
class TargetSpec:
    """A parsed ``--target`` value."""

    kind: str
    arg: str = ""
    options: dict[str, str] = field(default_factory=dict)


def parse_target(text: str) -> TargetSpec:
    """Parse and check a ``--target`` value (a mutant must be in the catalogue); ValueError if bad."""
    if text == "reference":
        return TargetSpec("reference")
    if text.startswith("mutant:"):
        name = text.split(":", 1)[1]
        if name not in CATALOGUE:
            raise ValueError(f"unknown mutant {name!r}; known: {', '.join(sorted(CATALOGUE))}")
        return TargetSpec("mutant", name)
    if text.startswith(("http://", "https://")):
        rest = text.split("://", 1)[1]
        if not rest.strip("/"):
            raise ValueError(f"target {text!r} names no host: expected http://HOST:PORT")
        return TargetSpec("http", text.rstrip("/"))
    if text.startswith("remoting://"):
        address, _, query = text.split("://", 1)[1].partition("?")
        address = address.rstrip("/")
        host, sep, port = address.rpartition(":")
        if not (host and sep and port.isdigit()):
            raise ValueError(f"target {text!r}: expected remoting://HOST:PORT (the name server's address)")
        return TargetSpec("remoting", address, _remoting_options(text, query))
    if text.startswith("pulsar://"):
        host, sep, port = text.split("://", 1)[1].rstrip("/").rpartition(":")
        if not (host and sep and port.isdigit() and 0 < int(port) <= 65535):
            raise ValueError(f"target {text!r}: expected pulsar://HOST:PORT (the service URL)")
        return TargetSpec("pulsar", f"{host}:{port}")
    if text.startswith("grpc://"):
        return _grpc_spec(text)
    if text == EMBEDDED_GRPC:
        return TargetSpec("grpc-reference")
    raise ValueError(
        f"unknown target {text!r}: expected 'reference', 'mutant:NAME', 'http://HOST:PORT', 'remoting://HOST:PORT', "
        "'pulsar://HOST:PORT', 'grpc://HOST:PORT?remoting=HOST:PORT' or 'grpc' (the reference over its gRPC front)"
    )


def _host_port(text: str, what: str, value: str) -> str:
    host, sep, port = value.rpartition(":")
    if not (host and sep and port.isdigit() and 0 < int(port) <= 65535):
        raise ValueError(f"target {text!r}: {what} {value!r} is not HOST:PORT")
    return value


def _grpc_spec(text: str) -> TargetSpec:
    """``grpc://HOST:PORT?remoting=HOST:PORT[&control=HOST:PORT]``: the MessagingService, the name server of the
    same deployment (required: v5 has no RPC to create a topic) and the runner's control channel."""
    address, _, query = text.split("://", 1)[1].partition("?")
    _host_port(text, "the MessagingService address", address.rstrip("/"))
    options: dict[str, str] = {}
    for item in filter(None, query.split("&")):
        key, eq, value = item.partition("=")
        if key not in GRPC_OPTIONS or not eq or key in options:
            raise ValueError(f"target {text!r}: options are one remoting=HOST:PORT and at most one control=HOST:PORT, "
                             f"got {item!r}")
        options[key] = _host_port(text, f"{key} address", value)
    if "remoting" not in options:
        raise ValueError(f"target {text!r}: grpc:// needs remoting=HOST:PORT, the name server of the same deployment "
                         "(v5 has no RPC to create a topic or read a queue's offsets)")
    return TargetSpec("grpc", address.rstrip("/"), options)


#: ``--target grpc``: the reference served by a child ``mqtck broker`` with its remoting and gRPC fronts, judged
#: through ``grpc://`` (``conformance.targets.launch``; ``mqtck conform`` starts and stops it).
EMBEDDED_GRPC = "grpc"
#: The query options of a ``grpc://`` target.
GRPC_OPTIONS = ("remoting", "control")


def _remoting_options(text: str, query: str) -> dict[str, str]:
    """The query of a ``remoting://`` target: at most ``control=HOST:PORT`` (the runner's control channel)."""
    options: dict[str, str] = {}
    for item in filter(None, query.split("&")):
        key, eq, value = item.partition("=")
        if key != "control" or not eq or key in options:
            raise ValueError(f"target {text!r}: the only option is one control=HOST:PORT, got {item!r}")
        host, sep, port = value.rpartition(":")
        if not (host and sep and port.isdigit() and 0 < int(port) <= 65535):
            raise ValueError(f"target {text!r}: control address {value!r} is not HOST:PORT")
        options[key] = value
    return options


_probed: dict[str, frozenset[str]] = {}


def _openable(text: str) -> TargetSpec:
    """``text`` parsed, as a target that can be opened here: ``grpc`` is a server ``mqtck conform`` starts first."""
    spec = parse_target(text)
    if spec.kind == "grpc-reference":
        raise ValueError("target 'grpc' is the reference over its gRPC front, started by mqtck conform; elsewhere "
                         "name its address: grpc://HOST:PORT?remoting=HOST:PORT")
    return spec


def target_capabilities(text: str) -> frozenset[str]:
    """The capabilities of ``text``: declared by the class in-process, asked of the server over HTTP
    (once per process; ``conformance.targets.http.UnreachableTarget`` if it does not answer)."""
    spec = _openable(text)
    if spec.kind == "http":
        if spec.arg not in _probed:
            declared = frozenset(probe(spec.arg)["capabilities"])
            _probed[spec.arg] = declared & CAPABILITIES
        return _probed[spec.arg]
    if spec.kind == "remoting":
        key = f"{spec.arg}?{spec.options.get('control', '')}"
        if key not in _probed:
            broker = discover_broker(spec.arg)  # UnreachableTarget if the name server does not answer
            control = spec.options.get("control")
            # The broker's protocol (POP or not), and the control channel's offer (UnreachableTarget if it does
            # not answer).
            offered = control_capabilities(control) if control else frozenset()
            _probed[key] = wire_capabilities(broker, spec.arg) | offered
        return _probed[key]
    if spec.kind == "pulsar":
        return PulsarTarget.capabilities
    if spec.kind == "grpc":
        key = f"grpc:{spec.arg}?{spec.options}"
        if key not in _probed:
            from conformance.targets.grpc import GrpcTarget

            probe_target = GrpcTarget(spec.arg, spec.options["remoting"], control=spec.options.get("control"))
            _probed[key] = probe_target.capabilities
            probe_target.close()
        return _probed[key]
    return ReferenceTarget.capabilities


def open_target(text: str, workdir: str, layout: StoreLayout | None = None,
                store_settings: dict[str, Any] | None = None) -> Target:
    """Open a target in ``workdir`` (a fresh directory the caller removes); an in-process reference or mutant
    with the segment sizes of ``layout`` and the MessageStoreConfig fields of ``store_settings`` if given."""
    spec = _openable(text)
    if spec.kind == "reference":
        return ReferenceTarget(workdir, layout=layout, store_settings=store_settings)
    if spec.kind == "http":
        return HttpTarget(spec.arg, target_capabilities(text))
    if spec.kind == "remoting":
        return RemotingTarget(spec.arg, name=text, control=spec.options.get("control"))
    if spec.kind == "pulsar":
        return PulsarTarget(spec.arg, name=text)
    if spec.kind == "grpc":
        from conformance.targets.grpc import GrpcTarget

        return GrpcTarget(spec.arg, spec.options["remoting"], name=text, control=spec.options.get("control"))
    return ReferenceTarget(workdir, mutant=CATALOGUE[spec.arg], name=text, layout=layout,
                           store_settings=store_settings)
