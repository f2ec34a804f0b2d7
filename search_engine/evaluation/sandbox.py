"""Run untrusted candidate code in a fresh, limited subprocess.

Each run gets: its own process group (timeouts kill the whole group: SIGTERM, a grace
period, then SIGKILL), resource limits (processes, open files, file size, CPU seconds;
not address space, which CUDA needs), an environment built from an allow-list (API keys,
database URLs and tokens never reach it), its own temporary working, home, Triton-cache
and Inductor-cache directories, and no network when `unshare -n` works on this host.

The child talks to the parent over two dedicated pipes (control out, control in) so its
own prints go to a log file and cannot forge protocol messages on stdout.
"""

from __future__ import annotations

import functools
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from search_engine.evaluation.config import SandboxLimits

# Variables copied from the parent when present; everything else is dropped.
ENV_ALLOWLIST = (
    "PATH", "LANG", "LC_ALL", "TZ", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_HOME",
    "CUDA_PATH", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "TRITON_PTXAS_PATH",
    "TRITON_CUDA_DIRS", "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
    "NVSHMEM_DISABLE_NVLS", "CC", "CXX",
)
SECRET_PATTERN = re.compile(r"KEY|SECRET|TOKEN|PASSW|CREDENTIAL|DATABASE_URL|REDIS_URL|AUTH|COOKIE",
                            re.IGNORECASE)
REPO_ROOT = str(Path(__file__).resolve().parents[2])


@functools.lru_cache(maxsize=1)
def network_isolation_available() -> bool:
    """Probe once: can this host run a command in a fresh network namespace?"""
    unshare = shutil.which("unshare")
    if not unshare:
        return False
    try:
        probe = subprocess.run([unshare, "-n", "true"], capture_output=True, timeout=10,
                               check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


def clean_environment(workdir: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: os.environ[k] for k in ENV_ALLOWLIST if k in os.environ and not SECRET_PATTERN.search(k)}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    home = workdir / "home"
    for sub in ("home", "tmp", "triton_cache", "inductor_cache"):
        (workdir / sub).mkdir(parents=True, exist_ok=True)
    env.update({
        "HOME": str(home),
        "TMPDIR": str(workdir / "tmp"),
        "TRITON_CACHE_DIR": str(workdir / "triton_cache"),
        "TORCHINDUCTOR_CACHE_DIR": str(workdir / "inductor_cache"),
        "PYTHONPATH": REPO_ROOT,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "PYTHONHASHSEED": "0",
    })
    env.update(extra or {})
    return {k: v for k, v in env.items() if not SECRET_PATTERN.search(k)}


def apply_rlimits(limits: SandboxLimits, timeout_s: float) -> dict[str, int]:
    """Called inside the child (before candidate code loads): lowers soft and hard limits."""
    import resource

    wanted = {
        "RLIMIT_NPROC": limits.max_processes,
        "RLIMIT_NOFILE": limits.max_open_files,
        "RLIMIT_FSIZE": limits.max_file_bytes,
        "RLIMIT_CPU": int(timeout_s * limits.cpu_seconds_per_wall_second) + 30,
    }
    applied = {}
    for name, value in wanted.items():
        which = getattr(resource, name)
        _, hard = resource.getrlimit(which)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (value, value))
        applied[name] = value
    return applied


@dataclass
class SandboxOutcome:
    returncode: int | None
    timed_out: bool
    wall_s: float
    log: str
    messages: list[dict] = field(default_factory=list)
    isolation: dict = field(default_factory=dict)


def isolation_summary(limits: SandboxLimits) -> dict:
    wants_net = limits.network != "off"
    net = wants_net and network_isolation_available()
    if limits.network == "required" and not net:
        raise RuntimeError("network isolation is required but `unshare -n` does not work here")
    return {
        "process_group": True,
        "network": "unshare -n (no network namespace access)" if net else
                   ("none: unshare -n not permitted on this host" if wants_net else "disabled by config"),
        "network_isolated": net,
        "rlimits": {
            "RLIMIT_NPROC": limits.max_processes, "RLIMIT_NOFILE": limits.max_open_files,
            "RLIMIT_FSIZE": limits.max_file_bytes, "RLIMIT_CPU": "timeout x "
            f"{limits.cpu_seconds_per_wall_second:g} + 30 s",
        },
        "environment": "allow-list; secrets dropped",
        "runs_as_root": os.geteuid() == 0,  # root is not bound by RLIMIT_NPROC
        "private_dirs": ["cwd", "HOME", "TMPDIR", "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR"],
    }


def run_child(
    args: list[str],
    workdir: Path,
    timeout_s: float,
    limits: SandboxLimits,
    env_extra: dict[str, str] | None = None,
    on_message: Callable[[dict, Callable[[str], None]], None] | None = None,
    log_chars: int = 4000,
    wrapper: list[str] | None = None,
) -> SandboxOutcome:
    """Run `python -m search_engine.evaluation.child <args>` sandboxed in `workdir`.

    `on_message(msg, reply)` sees every control message; it may block (e.g. waiting for
    the GPU timing lock): the time it spends is not charged to the candidate's timeout.
    """
    import json

    isolation = isolation_summary(limits)
    ctrl_out_r, ctrl_out_w = os.pipe()
    ctrl_in_r, ctrl_in_w = os.pipe()
    log_path = workdir / "child.log"
    cmd = [sys.executable, "-m", "search_engine.evaluation.child",
           "--ctrl-out", str(ctrl_out_w), "--ctrl-in", str(ctrl_in_r), *args]
    cmd = [*(wrapper or []), *cmd]  # e.g. ncu, which must run inside the same sandbox
    if isolation["network_isolated"]:
        cmd = [shutil.which("unshare") or "unshare", "-n", *cmd]
    env = clean_environment(workdir, env_extra)
    env["KERNELHUB_SANDBOX_TIMEOUT_S"] = str(timeout_s)
    started = time.monotonic()
    with open(log_path, "wb") as log_file:
        proc = subprocess.Popen(
            cmd, cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=log_file,
            stderr=subprocess.STDOUT, pass_fds=(ctrl_out_w, ctrl_in_r), start_new_session=True,
        )
    os.close(ctrl_out_w)
    os.close(ctrl_in_r)
    messages: list[dict] = []
    buffer = b""
    paused = 0.0
    timed_out = False

    def reply(text: str) -> None:
        try:
            os.write(ctrl_in_w, (text + "\n").encode())
        except OSError:
            pass

    try:
        while True:
            remaining = timeout_s - (time.monotonic() - started - paused)
            if remaining <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([ctrl_out_r], [], [], min(remaining, 0.5))
            if ready:
                chunk = os.read(ctrl_out_r, 65536)
                if not chunk:  # child closed its end: it exited (or is exiting)
                    break
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    try:
                        msg = json.loads(line)
                    except ValueError:
                        continue
                    messages.append(msg)
                    if on_message:
                        t0 = time.monotonic()
                        on_message(msg, reply)
                        paused += time.monotonic() - t0
            elif proc.poll() is not None:
                break
        if timed_out:
            kill_group(proc, limits.kill_grace_s)
        else:
            try:
                proc.wait(timeout=max(1.0, timeout_s - (time.monotonic() - started - paused)))
            except subprocess.TimeoutExpired:
                timed_out = True
                kill_group(proc, limits.kill_grace_s)
    finally:
        os.close(ctrl_out_r)
        os.close(ctrl_in_w)
        if proc.poll() is None:
            kill_group(proc, limits.kill_grace_s)
        else:  # the child is gone; clean up anything it left in its group
            _signal_group(proc.pid, signal.SIGKILL)
    log = _tail(log_path, log_chars)
    return SandboxOutcome(
        returncode=proc.returncode, timed_out=timed_out, wall_s=time.monotonic() - started,
        log=log, messages=messages, isolation=isolation,
    )


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def kill_group(proc: subprocess.Popen, grace_s: float) -> None:
    """SIGTERM the child's process group, then SIGKILL whatever is left after `grace_s`."""
    _signal_group(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        pass
    _signal_group(proc.pid, signal.SIGKILL)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def _tail(path: Path, limit: int) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    text = data.decode(errors="replace")
    return text if len(text) <= limit else "[... truncated ...]\n" + text[-limit:]


def make_workdir(prefix: str = "kernelhub-eval-") -> Path:
    return Path(tempfile.mkdtemp(prefix=prefix))
