"""An API key on the HTTP front (issue 20, access control), on a real loopback server: without the key nothing but
``/health`` is served, a refusal is a 401 in the front's error shape that leaks nothing, and the conformance
target sends the key from the environment. Binding beyond loopback without a key is warned about."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from conformance.targets.http import API_KEY_ENV, HttpTarget

pytestmark = pytest.mark.slow

KEY = "k3y-0f-the-http-front-1234"


def key_file(tmp_path: Path, *keys: str) -> str:
    path = tmp_path / "keys"
    path.write_text("# the keys this front accepts\n\n" + "\n".join(keys) + "\n")
    return str(path)


def test_requests_without_the_key_are_refused_and_learn_nothing(http_broker, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    broker = http_broker("--sim-clock", "--api-key-file", key_file(tmp_path, KEY, "another-key-of-16-chars"))
    good = httpx.Client(base_url=broker.url, headers={"X-API-Key": KEY}, timeout=30)
    assert good.post("/topics", json={"topic": "T", "queues": 1}).status_code == 201
    assert good.post("/topics/T/queues/0/messages", json={"body": "secret"}).status_code == 201

    for headers in ({}, {"X-API-Key": "wrong-key-of-enough-length"}, {"X-API-Key": KEY[:-1]},
                    {"Authorization": f"Bearer {KEY}"}):
        for method, path, body in (("POST", "/topics/T/queues/0/pull", {"consumerGroup": "G", "queueOffset": 0}),
                                   ("POST", "/topics/T/queues/0/messages", {"body": "forged"}),
                                   ("GET", "/capabilities", None), ("GET", "/groups/G/offsets/T/0", None)):
            response = broker.http.request(method, path, json=body, headers=headers)
            assert response.status_code == 401, (headers, path, response.text)
            assert response.headers["WWW-Authenticate"] == 'APIKey header="X-API-Key"'
            error = response.json()["error"]
            assert error["code"] == "UNAUTHORIZED" and error["field"] == "X-API-Key"
            assert "secret" not in response.text and "T" not in error["rule"]

    assert broker.http.get("/health").status_code == 200, "a liveness probe needs no key"
    pulled = good.post("/topics/T/queues/0/pull", json={"consumerGroup": "G", "queueOffset": 0}).json()
    assert [m["body"] for m in pulled["messages"]] == ["secret"], "the refused send stored nothing"
    assert httpx.get(f"{broker.url}/capabilities", headers={"X-API-Key": "another-key-of-16-chars"}).status_code == 200


def test_the_schema_declares_the_key_and_the_target_sends_it_from_the_environment(
        http_broker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    broker = http_broker("--sim-clock", "--api-key-file", key_file(tmp_path, KEY))
    doc = broker.http.get("/openapi.json").json()
    assert doc["components"]["securitySchemes"]["APIKeyHeader"] == {
        "type": "apiKey", "in": "header", "name": "X-API-Key",
        "description": "one of the keys in the file the broker was started with (--api-key-file)"}
    assert "401" in doc["paths"]["/topics"]["post"]["responses"]

    monkeypatch.setenv(API_KEY_ENV, KEY)
    target = HttpTarget(broker.url)
    try:
        assert "pull" in target.capabilities
        target.create_topic("T", 2)
        assert target.min_max("T", 1) == (0, 0)
    finally:
        target.close()


@pytest.mark.parametrize(("content", "says"), [
    ("short\n", "keys:1: a key must be at least 16 characters"),
    ("# nothing but a comment\n", "holds no key"),
])
def test_a_bad_key_file_is_a_usage_error(tmp_path: Path, content: str, says: str) -> None:
    path = tmp_path / "keys"
    path.write_text(content)
    run = subprocess.run([sys.executable, "-m", "conformance.cli", "broker", "--http", "127.0.0.1:0", "--data-dir",
                          str(tmp_path / "d"), "--api-key-file", str(path)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert says in run.stderr and len(run.stderr.strip().splitlines()) == 1 and "Traceback" not in run.stderr


def _first_stderr_line(tmp_path: Path, *flags: str) -> tuple[str, str]:
    """Start a broker with ``flags``, read its serving line, stop it: (serving line, stderr)."""
    proc = subprocess.Popen([sys.executable, "-m", "conformance.cli", "broker", *flags, "--data-dir",
                             str(tmp_path / "d")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    proc.terminate()
    _, err = proc.communicate(timeout=30)
    return line, err


@pytest.mark.parametrize("transport", ["--http", "--remoting"])
def test_binding_beyond_loopback_without_access_control_is_warned_about(tmp_path: Path, transport: str) -> None:
    line, err = _first_stderr_line(tmp_path, transport, "0.0.0.0:0")
    assert line.startswith("mqtck broker: serving ")
    warning = [w for w in err.splitlines() if "warning" in w]
    assert len(warning) == 1 and "beyond loopback, without access control" in warning[0]
    assert ("--api-key-file" if transport == "--http" else "--acl") in warning[0]

    _, quiet = _first_stderr_line(tmp_path, transport, "127.0.0.1:0")
    assert "warning" not in quiet
