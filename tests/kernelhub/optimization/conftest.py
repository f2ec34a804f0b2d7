"""Fixtures of the distributed-mode tests: a Redis server of the test's own, which a test may
stop and start again (the shared Redis on 6379 is never restarted)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest


class OwnRedis:
    """A redis-server on a free port, keeping nothing on disk; stopped by its process id."""

    def __init__(self, log_dir: Path):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.log = log_dir / "redis.log"
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> "OwnRedis":
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--logfile", str(self.log)], start_new_session=True)
        deadline = time.monotonic() + 20
        while not self.answers():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise AssertionError(f"redis-server on {self.port} did not answer: "
                                     + (self.log.read_text()[-1000:] if self.log.exists() else ""))
            time.sleep(0.1)
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(20)

    def client(self):
        import redis

        return redis.Redis.from_url(self.url, socket_timeout=2)

    def answers(self) -> bool:
        try:
            return bool(self.client().ping())
        except Exception:
            return False


@pytest.fixture
def own_redis(tmp_path):
    if not shutil.which("redis-server"):
        pytest.skip("redis-server is not installed")
    server = OwnRedis(tmp_path).start()
    yield server
    server.stop()
