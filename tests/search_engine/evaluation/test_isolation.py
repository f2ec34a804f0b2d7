"""The evaluation sandbox's OS isolation (search_engine/evaluation/isolation/).

Each test runs a real sandboxed Python script that tries one escape and asserts that the
escape failed and that the run still ended with a clear outcome. A layer this host cannot give
(see `probe()`) skips the tests that need it, naming the layer; on a root host with bubblewrap
and cgroups (CI, the GPU box) nothing skips. Self-contained (no django): runnable with
`--noconftest` on a GPU node.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from search_engine.evaluation import isolation as iso
from search_engine.evaluation.config import SandboxLimits
from search_engine.evaluation.isolation import (
    IsolationUnavailable,
    SandboxedProcess,
    probe,
    run_sandboxed,
    spawn_sandboxed,
)

MiB = 1 << 20
LIMITS = SandboxLimits(memory_bytes=2048 * MiB, kill_grace_s=1.0)
SECRET = "kernelhub-isolation-test-secret-4f1c9a"


@pytest.fixture(scope="module")
def report() -> dict:
    return probe(LIMITS)


def need(report: dict, *layers: str) -> None:
    missing = [layer for layer in layers if layer in report["layers_missing"]]
    if missing:
        pytest.skip(f"this host does not give the sandbox layer(s) {missing}: {report}")


@pytest.fixture
def workdir():
    path = Path(tempfile.mkdtemp(prefix="kernelhub-isotest-"))
    yield path
    shutil.rmtree(str(path), ignore_errors=True)


def sandbox_env(workdir: Path, **extra: str) -> dict[str, str]:
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(workdir), "LANG": "C.UTF-8",
           "PYTHONPATH": str(iso.REPO_ROOT), "PYTHONDONTWRITEBYTECODE": "1",
           "TRITON_CACHE_DIR": str(workdir / "triton_cache"), "TMPDIR": "/tmp"}
    env.update(extra)
    return env


def run_script(workdir: Path, code: str, *, timeout_s: float = 30, limits: SandboxLimits = LIMITS,
               env: dict[str, str] | None = None, args: tuple[str, ...] = (), **kw):
    script = workdir / "escape.py"
    script.write_text(textwrap.dedent(code))
    return run_sandboxed([sys.executable, str(script), *args], workdir, timeout_s=timeout_s,
                         limits=limits, env=env or sandbox_env(workdir), **kw)


def json_result(run) -> dict:
    lines = [ln for ln in run.output.splitlines() if ln.startswith("RESULT ")]
    assert lines, (run.returncode, run.output)
    return json.loads(lines[-1][len("RESULT "):])


# --------------------------------------------------------------------------- the report


def test_probe_is_truthful_about_each_layer(workdir, report):
    """What `probe()` claims is what a sandboxed process observes."""
    run = run_script(workdir, """
        import json, os, socket, sys
        pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
        try:
            open("/outside-workdir", "w").close(); root_rw = True
        except OSError:
            root_rw = False
        print("RESULT " + json.dumps({"uid": os.getuid(), "pids": pids, "root_rw": root_rw,
              "ifaces": [n for _, n in socket.if_nameindex()], "cwd": os.getcwd()}))
    """)
    seen = json_result(run)
    assert run.returncode == 0 and not run.timed_out and not run.memory_exceeded
    assert run.isolation["layers_missing"] == report["layers_missing"]
    assert seen["cwd"] == str(workdir.resolve())
    assert (seen["uid"] == 65534) == ("user" not in report["layers_missing"])
    assert report["pid_namespace"] == (len(seen["pids"]) <= 3 and max(seen["pids"]) < 10)
    assert report["network_namespace"] == (set(seen["ifaces"]) <= {"lo"})
    assert ("mount" not in report["layers_missing"]) == (not seen["root_rw"])
    for key in ("backend", "user", "mount_namespace", "network", "memory_limit", "process_limit"):
        assert isinstance(report[key], str) and report[key]


def test_full_isolation_on_a_root_host_with_bwrap(report):
    if os.geteuid() != 0 or not iso._find_bwrap()[0]:
        pytest.skip("needs root and bubblewrap (CI installs it in .ci/run)")
    assert report["backend"].startswith("bubblewrap"), report
    assert report["user"].startswith("uid 65534"), report
    assert report["pid_namespace"] and report["network_namespace"], report
    assert report["mount_namespace"].startswith("read-only root"), report
    assert report["memory_limit"].startswith("cgroup"), report
    assert report["layers_missing"] == [], report
    # "required" then starts fine
    assert probe(replace(LIMITS, isolation="required"))["layers_missing"] == []


def test_required_raises_when_bwrap_is_unavailable(workdir, monkeypatch):
    monkeypatch.setenv(iso.BWRAP_ENV, "/nonexistent/bwrap")
    monkeypatch.setenv("PATH", "/nonexistent-bin")
    # _find_bwrap reads LOCAL_BWRAP from its own module
    monkeypatch.setattr(iso.host_probe, "LOCAL_BWRAP", Path("/nonexistent/.tools/bwrap"))
    rep = probe(LIMITS)
    assert not rep["backend"].startswith("bubblewrap")
    assert not rep["pid_namespace"] and not rep["network_namespace"]
    assert {"pid", "mount", "net"} <= set(rep["layers_missing"])
    assert any("KERNELHUB_BWRAP=/nonexistent/bwrap" in n for n in rep.get("notes", []))
    with pytest.raises(IsolationUnavailable, match=r"pid.*mount.*net"):
        spawn_sandboxed([sys.executable, "-c", "pass"], workdir,
                        limits=replace(LIMITS, isolation="required"), env=sandbox_env(workdir),
                        gpu=False)
    # "auto" still runs, and its report says what is missing (the run sees the host's PIDs)
    run = run_script(workdir, """
        import os, json
        print("RESULT " + json.dumps(len([p for p in os.listdir("/proc") if p.isdigit()])))
    """, env=sandbox_env(workdir, PATH="/usr/bin:/bin"))
    assert run.returncode == 0, run.output
    assert run.isolation["pid_namespace"] is False
    assert json_result(run) > 3


def test_network_required_still_means_required(workdir, monkeypatch):
    with pytest.raises(IsolationUnavailable, match="network"):
        spawn_sandboxed([sys.executable, "-c", "pass"], workdir,
                        limits=replace(LIMITS, isolation="off", network="required"),
                        env=sandbox_env(workdir), gpu=False)


def test_isolation_off_is_a_plain_subprocess(workdir):
    run = run_script(workdir, "import os; print('RESULT', os.getuid())",
                     limits=replace(LIMITS, isolation="off"))
    assert run.returncode == 0 and json_result(run) == os.getuid()
    assert run.isolation["layers_missing"] == list(iso.LAYERS)
    assert "off" in run.isolation["backend"]


# --------------------------------------------------------------------------- escapes


def test_parent_environment_and_other_processes_are_unreachable(workdir, report, monkeypatch):
    need(report, "pid")
    monkeypatch.setenv("KERNELHUB_FAKE_API_KEY", SECRET)
    run = run_script(workdir, f"""
        import json, os
        found, readable = [], []
        for pid in [p for p in os.listdir("/proc") if p.isdigit()] + ["{os.getpid()}", str(os.getppid())]:
            try:
                data = open(f"/proc/{{pid}}/environ", "rb").read()
                readable.append(pid)
                if b"{SECRET}" in data:
                    found.append(pid)
            except OSError:
                pass
        found += [k for k, v in os.environ.items() if "{SECRET}" in v]
        pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
        print("RESULT " + json.dumps({{"found": found, "pids": pids, "me": os.getpid(),
                                      "ppid": os.getppid()}}))
    """)
    seen = json_result(run)
    assert run.returncode == 0 and not run.timed_out
    assert seen["found"] == []
    assert seen["pids"] == sorted({1, seen["me"]}), seen  # bwrap's init and the script itself


def test_repo_data_and_credentials_are_invisible(workdir, report, tmp_path):
    need(report, "mount")
    var = iso.REPO_ROOT / "var"
    created_var = not var.exists()
    var.mkdir(exist_ok=True)
    creds = var / "isolation-test-admin-credentials.txt"
    data_dir = var / "isolation-test-data"
    root_creds = iso.REPO_ROOT / ".isolation-test-admin-credentials.txt"
    outside_data = tmp_path / "kernelhub-data"
    try:
        data_dir.mkdir(exist_ok=True)
        outside_data.mkdir()
        for path in (creds, data_dir / "secret.txt", root_creds, outside_data / "secret.txt"):
            path.write_text(SECRET)
            path.chmod(0o644)
        targets = [str(creds), str(data_dir / "secret.txt"), str(root_creds),
                   str(outside_data / "secret.txt"), str(iso.REPO_ROOT / "kernelhub" / "settings.py"),
                   str(iso.REPO_ROOT / ".git" / "HEAD"), str(var / "db.sqlite3")]
        run = run_script(workdir, """
            import json, os, sys
            got = {}
            for path in sys.argv[1:]:
                try:
                    got[path] = open(path).read()[:64]
                except OSError as exc:
                    got[path] = None
            try:
                import kernelhub  # the editable install maps it into the repo
                got["import kernelhub"] = kernelhub.__file__ or "namespace"
            except ImportError:
                got["import kernelhub"] = None
            import search_engine.evaluation.config  # the evaluator's own package is there
            print("RESULT " + json.dumps({"got": got, "repo": sorted(os.listdir(os.environ["REPO"]))}))
        """, args=tuple(targets), env=sandbox_env(workdir, REPO=str(iso.REPO_ROOT),
                                                  KERNELHUB_DATA_DIR=str(outside_data)))
        seen = json_result(run)
        assert run.returncode == 0, run.output
        assert all(v is None for v in seen["got"].values()), seen["got"]
        assert set(seen["repo"]) <= {"search_engine", ".venv"}, seen["repo"]
    finally:
        for path in (creds, data_dir / "secret.txt", root_creds):
            path.unlink(missing_ok=True)
        data_dir.rmdir()
        if created_var:
            var.rmdir()


def test_writes_outside_the_workdir_fail(workdir, report):
    need(report, "mount")
    host_dir = Path(tempfile.mkdtemp(prefix="kernelhub-isotest-host-"))
    host_dir.chmod(0o777)  # permissions are not what stops it: the mount namespace is
    targets = [str(iso.PACKAGE_DIR / "isolation_escape.py"), str(Path(sys.prefix) / "escape.txt"),
               str(host_dir / "escape.txt"), "/escape.txt", "/etc/escape.txt",
               "/usr/escape.txt"]
    try:
        run = run_script(workdir, """
            import json, os, sys
            written = []
            for path in sys.argv[1:]:
                try:
                    with open(path, "w") as f:
                        f.write("escaped")
                    written.append(path)
                except OSError:
                    pass
            ok = []
            for path in ("inside.txt", "/tmp/private.txt", "/dev/shm/private.txt"):
                with open(path, "w") as f:
                    f.write("fine")
                ok.append(path)
            print("RESULT " + json.dumps({"written": written, "ok": ok}))
        """, args=tuple(targets))
        seen = json_result(run)
        assert run.returncode == 0, run.output
        assert seen["written"] == []
        assert len(seen["ok"]) == 3 and (workdir / "inside.txt").read_text() == "fine"
        for path in targets:
            assert not Path(path).exists(), path
        assert not Path("/tmp/private.txt").exists()
    finally:
        shutil.rmtree(str(host_dir), ignore_errors=True)


def test_host_unix_sockets_and_loopback_are_unreachable(workdir, report):
    need(report, "net")
    sock_dir = Path(tempfile.mkdtemp(prefix="kernelhub-isotest-sock-"))
    sock_dir.chmod(0o777)
    path = str(sock_dir / "host.sock")
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind(path)
    os.chmod(path, 0o777)
    unix.listen(4)
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract.bind("\0kernelhub-isotest-" + os.urandom(4).hex())
    abstract.listen(4)
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(4)
    accepted = []

    def serve(srv):
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
                accepted.append(srv.family)
                conn.close()
            except OSError:
                pass

    stop = threading.Event()
    threads = [threading.Thread(target=serve, args=(s,), daemon=True) for s in (unix, abstract, tcp)]
    for t in threads:
        t.start()
    try:
        run = run_script(workdir, """
            import json, socket, sys
            path, abstract, port = sys.argv[1], chr(0) + sys.argv[2], int(sys.argv[3])
            results = {}
            for name, family, address in (("unix", socket.AF_UNIX, path),
                                          ("abstract", socket.AF_UNIX, abstract),
                                          ("tcp", socket.AF_INET, ("127.0.0.1", port)),
                                          ("internet", socket.AF_INET, ("1.1.1.1", 53))):
                s = socket.socket(family, socket.SOCK_STREAM)
                s.settimeout(3)
                try:
                    s.connect(address)
                    results[name] = "connected"
                except OSError as exc:
                    results[name] = type(exc).__name__
                finally:
                    s.close()
            print("RESULT " + json.dumps(results))
        """, args=(path, abstract.getsockname()[1:].decode(), str(tcp.getsockname()[1])))
        seen = json_result(run)
        assert run.returncode == 0, run.output
        assert "connected" not in seen.values(), seen
        assert accepted == []
    finally:
        stop.set()
        for t in threads:
            t.join(2)
        for s in (unix, abstract, tcp):
            s.close()
        shutil.rmtree(str(sock_dir), ignore_errors=True)


DOUBLE_FORK = """
    import os, sys, time
    marker = sys.argv[1]
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            for fd in (0, 1, 2):
                os.close(fd)
            time.sleep(3)
            with open(marker, "w") as f:
                f.write("orphan survived")
            os._exit(0)
        os._exit(0)
    time.sleep(0.2)
    print("RESULT " + '"parent done"')
"""


def test_setsid_double_fork_orphans_die_with_the_run(workdir, report):
    need(report, "pid")
    marker = workdir / "orphan-marker.txt"
    # control: without isolation the same script leaves an orphan that writes the marker
    control_dir = Path(tempfile.mkdtemp(prefix="kernelhub-isotest-ctrl-"))
    control_marker = control_dir / "orphan-marker.txt"
    control = run_script(control_dir, DOUBLE_FORK, args=(str(control_marker),),
                         limits=replace(LIMITS, isolation="off"))
    run = run_script(workdir, DOUBLE_FORK, args=(str(marker),))
    try:
        assert run.returncode == 0 and json_result(run) == "parent done"
        assert control.returncode == 0
        time.sleep(5)  # the orphan would write 3 s after its start
        assert not marker.exists(), "an orphan outlived its sandbox"
        assert control_marker.exists(), "control: the test must see an orphan when unisolated"
    finally:
        shutil.rmtree(str(control_dir), ignore_errors=True)


def test_allocating_past_the_memory_limit_is_reported(workdir, report):
    limits = replace(LIMITS, memory_bytes=512 * MiB)
    run = run_script(workdir, """
        chunks = []
        for _ in range(16):
            chunks.append(bytearray(128 << 20))  # 2 GiB in all, every page written
        print("RESULT " + '"allocated 2 GiB"')
    """, limits=limits, timeout_s=60)
    assert not run.timed_out and run.wall_s < 60
    assert run.returncode != 0, run.output
    assert run.memory_exceeded, (run.returncode, run.output, run.isolation["memory_limit"])
    assert "512 MiB" in run.isolation["memory_limit"]
    # below the limit nothing is reported
    small = run_script(workdir, "b = bytearray(64 << 20); print('RESULT 1')", limits=limits)
    assert small.returncode == 0 and not small.memory_exceeded, small.output


def test_fork_bomb_ends_with_a_status_and_leaves_nothing(workdir, report):
    need(report, "pid")
    limits = replace(LIMITS, max_processes=128, memory_bytes=1024 * MiB)
    started = time.monotonic()
    run = run_script(workdir, """
        import os, time
        while True:
            try:
                os.fork()
            except OSError:
                time.sleep(0.01)
    """, limits=limits, timeout_s=8)
    assert time.monotonic() - started < 30
    assert run.timed_out or run.returncode != 0
    time.sleep(0.5)
    left = subprocess.run(["pgrep", "-f", str(workdir / "escape.py")], capture_output=True,
                          text=True).stdout.split()
    assert left == [], f"fork bomb processes survived: {left}"
    assert "pids.max = 128" in run.isolation["process_limit"] or \
        "RLIMIT_NPROC = 128" in run.isolation["process_limit"], run.isolation


def test_timeout_kills_the_whole_sandbox(workdir, report):
    token = secrets.token_hex(8)  # ours alone: other tests (other workers) sleep too
    run = run_script(workdir, f"""
        import subprocess, sys, time
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)  # {token}"])
        time.sleep(60)
    """, timeout_s=2)
    assert run.timed_out and run.wall_s < 15
    left = subprocess.run(["pgrep", "-f", token], capture_output=True, text=True).stdout.split()
    assert left == []


def test_pass_fds_keep_their_numbers(workdir):
    r, w = os.pipe()
    a, b = socket.socketpair()
    try:
        code = textwrap.dedent("""
            import os, socket, sys
            w, fd = int(sys.argv[1]), int(sys.argv[2])
            os.write(w, b"pipe ok\\n")
            s = socket.socket(fileno=fd)
            s.sendall(b"socket ok")
            s.close()
        """)
        (workdir / "fds.py").write_text(code)
        proc = spawn_sandboxed([sys.executable, str(workdir / "fds.py"), str(w), str(b.fileno())],
                               workdir, limits=LIMITS, env=sandbox_env(workdir), gpu=False,
                               pass_fds=(w, b.fileno()))
        assert isinstance(proc, SandboxedProcess)
        os.close(w)
        b.close()
        try:
            assert proc.popen.wait(timeout=30) == 0
        finally:
            proc.kill(0.5)
            proc.cleanup()
            proc.cleanup()  # idempotent
        assert os.read(r, 100) == b"pipe ok\n"
        a.settimeout(5)
        assert a.recv(100) == b"socket ok"
    finally:
        os.close(r)
        a.close()


def test_kill_stops_everything_and_cleanup_removes_cgroups(workdir):
    (workdir / "sleep.py").write_text("import signal, time\n"
                                      "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                                      "time.sleep(60)\n")
    proc = spawn_sandboxed([sys.executable, str(workdir / "sleep.py")], workdir, limits=LIMITS,
                           env=sandbox_env(workdir), gpu=False)
    time.sleep(0.5)
    groups = [g.path for g in proc._groups]
    started = time.monotonic()
    proc.kill(0.5)  # SIGTERM is ignored: SIGKILL after the grace
    assert proc.popen.poll() is not None and time.monotonic() - started < 10
    proc.cleanup()
    assert all(not p.exists() for p in groups)
    assert not proc.memory_exceeded()


def test_torch_imports_and_a_triton_interpreter_kernel_runs(workdir, report):
    pytest.importorskip("triton")
    run = run_script(workdir, """
        import json
        import torch, triton
        import triton.language as tl

        @triton.jit
        def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

        x, y = torch.arange(100, dtype=torch.float32), torch.ones(100)
        out = torch.empty_like(x)
        add[(triton.cdiv(100, 32),)](x, y, out, 100, BLOCK=32)
        print("RESULT " + json.dumps({"ok": bool(torch.equal(out, x + 1)), "torch": torch.__version__}))
    """, env=sandbox_env(workdir, TRITON_INTERPRET="1"), timeout_s=180,
        limits=replace(LIMITS, memory_bytes=SandboxLimits().memory_bytes))
    assert run.returncode == 0, run.output
    assert json_result(run)["ok"] is True


def test_cli_isolation_flag_reaches_the_sandbox_limits():
    from search_engine.cli import build_parser, with_isolation
    from search_engine.evaluation.config import EvaluationConfig

    args = build_parser().parse_args(["evaluate", "--problem", "p.py", "--candidate", "c.py",
                                      "--isolation", "required"])
    assert args.isolation == "required"
    config = with_isolation(EvaluationConfig(), args)
    assert config.limits.isolation == "required"
    default = build_parser().parse_args(["evaluate", "--problem", "p.py", "--candidate", "c.py"])
    assert with_isolation(EvaluationConfig(), default).limits.isolation == "auto"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["evaluate", "--problem", "p", "--candidate", "c",
                                   "--isolation", "maybe"])


def test_search_engine_isolation_is_stdlib_only():
    out = subprocess.run([sys.executable, "-c", "import sys, search_engine.evaluation.isolation as m;"
                          "print(sorted(n for n in ('django', 'torch', 'triton', 'numpy') "
                          "if n in sys.modules))"], capture_output=True, text=True,
                         cwd=iso.REPO_ROOT, env={**os.environ, "PYTHONPATH": str(iso.REPO_ROOT)})
    assert out.stdout.strip() == "[]", out.stderr


# --------------------------------------------------------------------------- GPU


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda_available(), reason="needs a CUDA GPU")
def test_cuda_works_inside_the_sandbox(workdir, report):
    run = run_script(workdir, """
        import json, os, torch
        ok = torch.cuda.is_available()
        a = torch.randn(512, 512, device="cuda")
        c = (a @ a).sum().item()
        torch.cuda.synchronize()
        pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
        print("RESULT " + json.dumps({"cuda": ok, "sum": c, "pids": pids, "me": os.getpid(),
                                      "uid": os.getuid(), "name": torch.cuda.get_device_name()}))
    """, gpu=True, timeout_s=300, limits=replace(LIMITS, memory_bytes=SandboxLimits().memory_bytes))
    seen = json_result(run)
    assert run.returncode == 0, run.output
    assert seen["cuda"] is True
    if run.isolation["pid_namespace"]:
        assert seen["pids"] == sorted({1, seen["me"]}), seen
    if "user" not in run.isolation["layers_missing"]:
        assert seen["uid"] == 65534
