"""The strategy exec protocol on the wire (DESIGN.md, "Strategy exec protocol").

The checker starts the program once and writes one JSON object per line to its stdin::

    {"consumerGroup": "GID_demo", "currentCID": "10.0.3.4@12345",
     "mqAll": [{"topic": "TopicTest", "brokerName": "broker-a", "queueId": 0}, ...],
     "cidAll": ["10.0.3.4@12345", ...], "params": {}}

and the program answers each line, in order, with one line: ``{"result": [queue, ...]}`` (``null``
counts as no queues) or ``{"error": "text"}`` for a refusal (RocketMQ's exception, e.g.
``"java.lang.IllegalArgumentException: mqAll is null or mqAll empty"``). Field names are those of the
golden vectors. Requests are pipelined: the checker may write several before reading the answers.
The JSON Schema is ``fixtures/allocation/exec-protocol.schema.json``; this module is the one place
that encodes and decodes it, so the two are tested against each other.
"""

from __future__ import annotations

import json
from typing import Any

from conformance.strategy.model import Outcome, Request, canonical_params
from reference.allocation import MessageQueue

#: Longest piece of a bad answer quoted in an error message.
QUOTE_CHARS = 80


class ProtocolError(Exception):
    """The program broke the protocol (crashed, hung, answered malformed JSON). One line of text."""


def _dumps(value: Any) -> str:
    # ASCII on the wire: every language reads it, and lone surrogates survive as \\ud83d escapes.
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"))


class RequestEncoder:
    """Encodes requests, reusing the JSON of ``mqAll``/``cidAll`` across a group (same objects)."""

    def __init__(self) -> None:
        self._mq_all: tuple[MessageQueue, ...] | None = None
        self._mq_json = ""
        self._cid_all: tuple[str, ...] | None = None
        self._cid_json = ""

    def encode(self, request: Request) -> bytes:
        if request.mq_all is not self._mq_all:
            self._mq_all, self._mq_json = request.mq_all, _dumps([mq.to_json() for mq in request.mq_all])
        if request.cid_all is not self._cid_all:
            self._cid_all, self._cid_json = request.cid_all, _dumps(list(request.cid_all))
        return (
            f'{{"consumerGroup":{_dumps(request.consumer_group)},"currentCID":{_dumps(request.current_cid)},'
            f'"mqAll":{self._mq_json},"cidAll":{self._cid_json},"params":{request.params_json}}}\n'
        ).encode("ascii")


def decode_response(line: bytes, number: int, request: Request) -> Outcome:
    """Parse one answer line; :class:`ProtocolError` naming request ``number`` if it is malformed."""
    where = f"answer to request #{number} ({request.describe()})"
    try:
        obj = json.loads(line)
    except ValueError:
        text = line.decode("utf-8", "replace").strip()[:QUOTE_CHARS]
        raise ProtocolError(f"{where} is not JSON: {text!r}") from None
    if not isinstance(obj, dict) or ("result" in obj) == ("error" in obj):
        raise ProtocolError(f'{where} must be an object with exactly one of "result" or "error"')
    if "error" in obj:
        if not isinstance(obj["error"], str):
            raise ProtocolError(f'{where}: "error" must be a string')
        return Outcome(error=obj["error"])
    result = obj["result"]
    if result is None:
        return Outcome()
    if not isinstance(result, list):
        raise ProtocolError(f'{where}: "result" must be a list of queues or null')
    try:
        return Outcome(queues=tuple(MessageQueue.from_json(q) for q in result))
    except ValueError as exc:
        raise ProtocolError(f"{where}: {exc}") from None


def decode_request(line: bytes) -> Request:
    """Parse one request line (the program's side); ``ValueError`` naming the bad field."""
    obj = json.loads(line)
    if not isinstance(obj, dict):
        raise ValueError("request must be a JSON object")
    group, cid, mq_all, cid_all = obj.get("consumerGroup"), obj.get("currentCID"), obj.get("mqAll"), obj.get("cidAll")
    params = obj.get("params", {})
    if not isinstance(group, str) or not isinstance(cid, str):
        raise ValueError('"consumerGroup" and "currentCID" must be strings')
    if not isinstance(mq_all, list) or not isinstance(cid_all, list) or not all(isinstance(c, str) for c in cid_all):
        raise ValueError('"mqAll" must be a list of queues and "cidAll" a list of strings')
    if not isinstance(params, dict):
        raise ValueError('"params" must be an object')
    queues = tuple(MessageQueue.from_json(q) for q in mq_all)
    return Request(group, cid, queues, tuple(cid_all), canonical_params(params))


def encode_response(outcome: Outcome) -> bytes:
    """One answer line. An interface defect travels as an error so the line stays well-formed."""
    if outcome.defect is not None:
        return (_dumps({"error": f"defect: {outcome.defect}"}) + "\n").encode("ascii")
    if outcome.error is not None:
        return (_dumps({"error": outcome.error}) + "\n").encode("ascii")
    return (_dumps({"result": [mq.to_json() for mq in outcome.queues]}) + "\n").encode("ascii")
