"""The sandbox: timeouts kill the process group, secrets stay out, no network."""

import socket
import time
from pathlib import Path

import pytest

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


@pytest.mark.parametrize("isolation", ["auto", "off"])
def test_timeout_kills_every_process_the_candidate_started(run_eval, tmp_path, isolation):
    from dataclasses import replace

    from search_engine.evaluation.config import SandboxLimits

    marker = tmp_path / "grandchild.pid"
    marker.touch()
    marker.chmod(0o666)
    tmp_path.chmod(0o777)
    src = candidate("spawn_and_hang").replace('MARKER = ""', f"MARKER = {str(marker)!r}")
    limits = replace(SandboxLimits(), isolation=isolation)
    r = run_eval(src, timeout_s=15, static_checks=False, limits=limits)
    assert r.status == "timeout"
    if isolation == "off":  # a plain process group: the grandchild could write its pid
        for _ in range(50):
            if marker.read_text():
                break
            time.sleep(0.1)
        pids = [int(marker.read_text())]
    else:  # sandboxed: it cannot reach the host's files; look for its processes instead
        assert marker.read_text() == ""
        pids = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()
                and str(marker) in _cmdline(p)]
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in pids if _alive(pid)], "a process survived the timeout"


def _cmdline(proc_dir: Path) -> str:
    try:
        return (proc_dir / "cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


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


def test_isolation_layers_are_reported(clean_softmax_result):
    r = clean_softmax_result
    for layer in ("backend", "user", "pid_namespace", "mount_namespace", "network_namespace",
                  "memory_limit", "process_limit", "layers_missing"):
        assert layer in r.isolation, layer


def test_statically_rejected_candidates_never_start_a_sandbox(run_eval):
    for name in ("background_thread", "timer_patch", "env_reader", "socket_open", "decoy_softmax"):
        r = run_eval(candidate(name))
        assert r.status == "hack_suspected", name
        assert "not started" in r.isolation["sandbox"]
