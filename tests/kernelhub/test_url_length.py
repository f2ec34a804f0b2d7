"""Over-long URLs answer 414 with a message, in-process and through a real Daphne."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from kernelhub.http_limits import MaxUrlLengthMiddleware

REPO = Path(__file__).resolve().parents[2]


def call(app, path: str, query: bytes = b"") -> tuple[list[dict], bool]:
    """Drive the middleware on a fresh event loop in its own thread: independent of whatever
    loop earlier tests of the run left in this thread."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, _call(app, path, query)).result()


async def _call(app, path: str, query: bytes = b"") -> tuple[list[dict], bool]:
    sent, reached = [], []

    async def inner(scope, receive, send):
        reached.append(scope)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": path, "raw_path": path.encode(),
             "query_string": query, "headers": []}
    await MaxUrlLengthMiddleware(inner, **app)(scope, receive, send)
    return sent, bool(reached)


def test_in_process_long_url_is_414_and_short_passes():
    sent, reached = call({"max_bytes": 100}, "/odata/kernels", b"$filter=" + b"x" * 200)
    assert not reached and sent[0]["status"] == 414
    error = json.loads(sent[1]["body"])["error"]
    assert error["code"] == "URITooLong" and "100 bytes" in error["message"]
    sent, reached = call({"max_bytes": 100}, "/odata/kernels", b"$top=1")
    assert reached and sent[0]["status"] == 200


def test_limit_comes_from_settings(settings):
    settings.KERNELHUB_MAX_URL_BYTES = 50
    sent, reached = call({}, "/" + "a" * 60)
    assert not reached and sent[0]["status"] == 414
    settings.KERNELHUB_MAX_URL_BYTES = 8192
    sent, reached = call({}, "/" + "a" * 60)
    assert reached


def test_the_project_application_is_wrapped():
    from kernelhub.asgi import application

    assert isinstance(application, MaxUrlLengthMiddleware)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def raw_get(port: int, target: str, timeout: float = 15.0) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     "Connection: close\r\n\r\n".encode())
        chunks = []
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks)


@pytest.fixture(scope="module")
def daphne_server():
    """Daphne serving kernelhub.asgi:application, as `make run` does."""
    port = free_port()
    data_dir = tempfile.mkdtemp(prefix="kernelhub-daphne-")
    env = {**os.environ, "KERNELHUB_DATA_DIR": data_dir, "DEBUG": "1", "DATABASE_URL": "",
           "REDIS_URL": "", "PYTHONPATH": str(REPO), "KERNELHUB_MAX_URL_BYTES": "8192"}
    log = open(Path(data_dir) / "daphne.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                             "kernelhub.asgi:application"], cwd=REPO, env=env, stdout=log,
                            stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("daphne did not start")
    if proc.poll() is not None:
        pytest.fail("daphne exited: " + (Path(data_dir) / "daphne.log").read_text()[-3000:])
    yield port
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


@pytest.mark.slow
@pytest.mark.parametrize("length", [10 * 1024, 20 * 1024, 100 * 1024])
def test_daphne_answers_414_for_long_urls(daphne_server, length):
    target = "/odata/kernels?$filter=" + "a" * length
    response = raw_get(daphne_server, target)
    assert response.startswith(b"HTTP/1.1 414"), response[:300]
    body = response.split(b"\r\n\r\n", 1)[1]
    assert json.loads(body)["error"]["code"] == "URITooLong"
    assert b"8192 bytes" in body


@pytest.mark.slow
def test_daphne_still_serves_normal_urls(daphne_server):
    response = raw_get(daphne_server, "/healthz?" + "a" * 4000)
    assert response.startswith(b"HTTP/1.1 200"), response[:300]
