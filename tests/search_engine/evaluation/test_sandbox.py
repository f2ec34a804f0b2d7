"""The sandbox: timeouts kill the process group, secrets stay out, no network."""

import socket
import time
from pathlib import Path

from search_engine.evaluation.sandbox import clean_environment, network_isolation_available

from .conftest import candidate


def test_clean_environment_drops_secrets(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("DATABASE_URL", "postgres://u:p@h/db")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    env = clean_environment(tmp_path)
    assert "OPENAI_API_KEY" not in env and "DATABASE_URL" not in env
    assert env["CUDA_VISIBLE_DEVICES"] == "0"
    assert env["HOME"].startswith(str(tmp_path))
    assert env["TRITON_CACHE_DIR"].startswith(str(tmp_path))


def test_hang_times_out(run_eval):
    t0 = time.monotonic()
    r = run_eval(candidate("hang"), timeout_s=8)
    assert r.status == "timeout" and "8 s" in r.message
    assert time.monotonic() - t0 < 30
    assert r.reward == 0


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in state  # a zombie is dead, only not yet reaped


def test_timeout_kills_the_whole_process_group(run_eval, tmp_path):
    marker = tmp_path / "grandchild.pid"
    src = candidate("spawn_and_hang").replace('MARKER = ""', f"MARKER = {str(marker)!r}")
    r = run_eval(src, timeout_s=15, static_checks=False)
    assert r.status == "timeout"
    for _ in range(50):  # the grandchild writes its pid right after it starts
        if marker.exists() and marker.read_text():
            break
        time.sleep(0.1)
    pid = int(marker.read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid), f"grandchild {pid} survived the timeout"


def test_secrets_never_reach_the_candidate(run_eval, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-very-secret")
    monkeypatch.setenv("MY_SECRET_TOKEN", "tok-123")
    r = run_eval(candidate("env_reader"), static_checks=False)
    assert r.status == "correct", r.message  # it found no secret to complain about
    assert "ENV-DUMP" in r.logs
    assert "sk-very-secret" not in r.logs and "tok-123" not in r.logs


def test_network_is_isolated_when_the_host_allows(run_eval):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(0.5)
    port = server.getsockname()[1]
    try:
        src = candidate("socket_open").replace("PORT = 0", f"PORT = {port}")
        r = run_eval(src, static_checks=False)
        accepted = True
        try:
            server.accept()
        except TimeoutError:
            accepted = False
    finally:
        server.close()
    if network_isolation_available():
        assert r.isolation["network_isolated"] is True
        assert r.status == "runtime_error"  # the connection failed inside the sandbox
        assert not accepted
    else:
        assert r.isolation["network_isolated"] is False
        assert "not permitted" in r.isolation["network"]


def test_rlimits_and_private_dirs_are_reported(clean_softmax_result):
    r = clean_softmax_result
    assert set(r.isolation["rlimits"]) == {"RLIMIT_NPROC", "RLIMIT_NOFILE", "RLIMIT_FSIZE",
                                           "RLIMIT_CPU"}
    assert "TRITON_CACHE_DIR" in r.isolation["private_dirs"]


def test_statically_rejected_candidates_never_start_a_sandbox(run_eval):
    for name in ("background_thread", "timer_patch", "env_reader", "socket_open", "decoy_softmax"):
        r = run_eval(candidate(name))
        assert r.status == "hack_suspected", name
        assert "not started" in r.isolation["sandbox"]
