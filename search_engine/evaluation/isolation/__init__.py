"""OS-level isolation for untrusted candidate processes (stdlib only).

`spawn_sandboxed(argv, workdir, ...)` starts `argv` in layers, each probed once per host and
reported truthfully in `SandboxedProcess.isolation`:

- backend: bubblewrap (`bwrap`, or `$KERNELHUB_BWRAP`, or `<repo>/.tools/bwrap/usr/bin/bwrap`);
  else util-linux `unshare` (root only); else a plain subprocess in its own session.
- user: when the parent is root, a tiny launcher inside the namespaces drops to uid/gid 65534
  (no supplementary groups, no capabilities, `no_new_privs`) right before exec. bwrap itself runs
  as root without a user namespace (a `--unshare-user --uid 65534` mapping would leave the
  process as kernel uid 0: root-owned files stay "its own" and RLIMIT_NPROC is not enforced).
- PID namespace: bwrap's init is pid 1; when the candidate's main process exits (or bwrap or
  the parent dies), the kernel kills everything left in the namespace: no orphan survives.
- mount namespace (bwrap): an empty read-only root with read-only binds of /usr, /lib*, /bin,
  /sbin, /etc (shadow, ssh keys, sudoers... masked), the Python installation and the venv, the
  repo's `search_engine/` only (not kernelhub/, var/, tests/, .git) and `extra_ro_paths`; a new
  /proc, a minimal /dev, private tmpfs /tmp and /dev/shm; the workdir is the only writable bind.
  With `gpu=True` also /dev/nvidia*, a read-only /sys and the driver's library directories.
- network namespace: only a loopback of its own; no host unix sockets (/run, /var, /tmp unbound).
- memory: a per-sandbox cgroup (v2 `memory.max`, else v1 `memory.limit_in_bytes`), joined by a
  launcher before the namespaces exist; else RLIMIT_AS (CPU only: CUDA reserves huge address
  space); else a watchdog thread that polls the RSS of the process tree every 0.2 s.
- processes: a pids cgroup (`pids.max`) when available, and RLIMIT_NPROC for uid 65534.

`run_sandboxed` is the blocking convenience used by tests and validation runs.

Layout: `command` builds the sandbox's command line (namespaces, bwrap mounts, the launcher
that applies rlimits and the uid drop), `cgroups` the memory and pids limits, `host_probe`
finds which layers work here and reports them (`probe`), `processes` watches and kills a
started sandbox. This module starts one (`spawn_sandboxed`, `run_sandboxed`).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from search_engine.evaluation.config import SandboxLimits
from search_engine.evaluation.isolation.cgroups import (  # noqa: F401
    GiB, _Group, _human, _memory_group, _pids_group,
)
from search_engine.evaluation.isolation.command import (  # noqa: F401
    LAUNCHER, PACKAGE_DIR, REPO_ROOT, _Plan, _prepare_workdir, bwrap_has_size,
)
from search_engine.evaluation.isolation.host_probe import (  # noqa: F401
    BWRAP_ENV, LAYERS, LOCAL_BWRAP, PROBE_SCRIPT, _find_bwrap, _host_facts, _nproc_limit, probe,
)
from search_engine.evaluation.isolation.processes import (
    DISK_WATCH_INTERVAL_S, DISK_MAX_ENTRIES, SandboxedProcess, WATCHDOG_INTERVAL_S, _tail_file,
)


class IsolationUnavailable(RuntimeError):
    """`isolation="required"` (or `network="required"`) and a layer does not work here."""


@dataclass
class SandboxRun:
    returncode: int | None
    timed_out: bool
    memory_exceeded: bool
    wall_s: float
    output: str
    isolation: dict = field(default_factory=dict)


def spawn_sandboxed(
    argv: list[str],
    workdir: Path,
    *,
    limits: SandboxLimits,
    env: dict[str, str],
    gpu: bool,
    pass_fds: tuple[int, ...] = (),
    stdout=None,
    extra_ro_paths: tuple[str, ...] = (),
    cpu_timeout_s: float | None = None,
) -> SandboxedProcess:
    """Start `argv` (cwd = workdir) inside every isolation layer this host gives.

    `stdout` (a file) receives stdout and stderr. RLIMIT_CPU is timeout x
    `limits.cpu_seconds_per_wall_second` + 30 s, the timeout being `cpu_timeout_s` or
    `env["KERNELHUB_SANDBOX_TIMEOUT_S"]` (no CPU limit when neither is given).
    """
    workdir = Path(workdir).resolve()
    if limits.isolation not in ("auto", "required", "off"):
        raise ValueError(f"SandboxLimits.isolation must be auto, required or off, "
                         f"not {limits.isolation!r}")
    report = probe(limits, gpu)
    stderr = subprocess.STDOUT if stdout is not None else None
    output_path = getattr(stdout, "name", None) if stdout is not None else None
    output_path = output_path if isinstance(output_path, str) else None
    if limits.isolation == "off":
        if limits.network == "required":
            raise IsolationUnavailable("network isolation is required but isolation is 'off'")
        popen = subprocess.Popen(argv, cwd=workdir, env=env, stdin=subprocess.DEVNULL,
                                 stdout=stdout, stderr=stderr, pass_fds=pass_fds,
                                 start_new_session=True)
        return _watch_disk(SandboxedProcess(popen=popen, isolation=report,
                                            memory_bytes=limits.memory_bytes,
                                            _output_path=output_path), limits, workdir)
    if limits.network == "required" and not report["network_isolated"]:
        raise IsolationUnavailable("network isolation is required but no network namespace works "
                                   "on this host" + _notes(report))
    if limits.isolation == "required" and report["layers_missing"]:
        raise IsolationUnavailable("isolation is required but these layers do not work here: "
                                   + ", ".join(report["layers_missing"]) + _notes(report))
    facts = _host_facts(os.environ.get(BWRAP_ENV), os.environ.get("PATH"), os.geteuid())
    drop = report["user"].startswith("uid 65534")
    rlimits = {
        "RLIMIT_NOFILE": limits.max_open_files,
        # no one file (the log, a write into the workdir) may outgrow the disk limit
        "RLIMIT_FSIZE": min(limits.max_file_bytes, limits.disk_bytes),
    }
    if cpu_timeout_s is None and env.get("KERNELHUB_SANDBOX_TIMEOUT_S"):
        cpu_timeout_s = float(env["KERNELHUB_SANDBOX_TIMEOUT_S"])
    if cpu_timeout_s is not None:
        rlimits["RLIMIT_CPU"] = int(cpu_timeout_s * limits.cpu_seconds_per_wall_second) + 30
    groups: list[_Group] = []
    mem_group, mem_text = _memory_group(limits)
    if mem_group is not None:
        groups.append(mem_group)
        memory_mode = "cgroup"
    elif not gpu:
        rlimits["RLIMIT_AS"] = int(limits.memory_bytes)
        memory_mode = "rlimit"
        mem_text = f"RLIMIT_AS = {_human(limits.memory_bytes)} per process"
    else:
        memory_mode = "watchdog"
        mem_text = (f"watchdog on RSS of the process tree every {WATCHDOG_INTERVAL_S} s, "
                    f"{_human(limits.memory_bytes)}")
    pids_group, pids_text = _pids_group(limits)
    if pids_group is not None:
        groups.append(pids_group)
    # RLIMIT_NPROC counts every process and thread of uid 65534 on the host, i.e. of all the
    # sandboxes running at once: with a per-sandbox pids cgroup it is only a looser backstop.
    nproc_value = _nproc_limit(limits, pids_group is not None)
    rlimits["RLIMIT_NPROC"] = nproc_value
    isolation = dict(report)
    isolation["memory_limit"] = mem_text
    nproc = (f"RLIMIT_NPROC = {nproc_value} (uid 65534, shared by all sandboxes)" if drop
             else "RLIMIT_NPROC (not enforced: runs as root)")
    isolation["process_limit"] = f"{pids_text}; {nproc}" if pids_text else nproc
    isolation["disk_limit"] = disk_limit_text(limits, facts["bwrap"])
    if memory_mode == "watchdog" and "memory" not in isolation["layers_missing"]:
        isolation["layers_missing"] = [*isolation["layers_missing"], "memory"]
    if memory_mode != "watchdog" and "memory" in isolation["layers_missing"]:
        isolation["layers_missing"] = [x for x in isolation["layers_missing"] if x != "memory"]
    if limits.isolation == "required" and isolation["layers_missing"]:
        for g in groups:
            g.remove()
        raise IsolationUnavailable("isolation is required but these layers do not work here: "
                                   + ", ".join(isolation["layers_missing"]))
    plan = _Plan(backend=facts["backend"], tool=facts["bwrap"] or facts["unshare"], drop=drop,
                 net=limits.network != "off", gpu=gpu, workdir=workdir,
                 extra_ro_paths=tuple(extra_ro_paths), rlimits=rlimits,
                 cgroup_procs=[str(g.procs) for g in groups],
                 tmpfs_bytes=limits.disk_bytes if bwrap_has_size(facts["bwrap"]) else 0)
    try:
        _prepare_workdir(workdir, drop)
        popen = subprocess.Popen(plan.command(list(argv)), cwd=workdir, env=env,
                                 stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                                 pass_fds=pass_fds, start_new_session=True)
    except BaseException:
        for g in groups:
            g.remove()
        raise
    proc = SandboxedProcess(popen=popen, isolation=isolation, memory_bytes=limits.memory_bytes,
                            _groups=groups, _memory_group=mem_group, _memory_mode=memory_mode,
                            _output_path=output_path)
    if memory_mode == "watchdog":
        proc._watchdog = threading.Thread(target=proc._watch, args=(WATCHDOG_INTERVAL_S,),
                                          name="kernelhub-memory-watchdog", daemon=True)
        proc._watchdog.start()
    return _watch_disk(proc, limits, workdir)


def _watch_disk(proc: SandboxedProcess, limits: SandboxLimits, workdir: Path) -> SandboxedProcess:
    """The workdir is the host's disk: a watcher kills the sandbox when what it holds passes
    `limits.disk_bytes` (RLIMIT_FSIZE already stops any one file at that size)."""
    proc.disk_bytes, proc._workdir = limits.disk_bytes, str(workdir)
    proc._disk_watcher = threading.Thread(target=proc._watch_disk, args=(DISK_WATCH_INTERVAL_S,),
                                          name="kernelhub-disk-watchdog", daemon=True)
    proc._disk_watcher.start()
    return proc


def disk_limit_text(limits: SandboxLimits, bwrap: str | None) -> str:
    size = _human(limits.disk_bytes)
    tmpfs = f"; /tmp and /dev/shm are tmpfs of {size}" if bwrap_has_size(bwrap) else ""
    return (f"workdir watched every {DISK_WATCH_INTERVAL_S} s, killed above {size} or "
            f"{DISK_MAX_ENTRIES} entries; RLIMIT_FSIZE = {size} per file{tmpfs}")


def _notes(report: dict) -> str:
    return f" ({'; '.join(report['notes'])})" if report.get("notes") else ""


def run_sandboxed(
    argv: list[str],
    workdir: Path,
    *,
    timeout_s: float,
    limits: SandboxLimits,
    env: dict[str, str],
    gpu: bool = False,
    pass_fds: tuple[int, ...] = (),
    extra_ro_paths: tuple[str, ...] = (),
    output_chars: int = 4000,
) -> SandboxRun:
    """Run `argv` sandboxed to completion (or `timeout_s`); the tail of its output."""
    started = time.monotonic()
    with tempfile.NamedTemporaryFile(prefix="kernelhub-sandbox-out-", suffix=".log") as out:
        proc = spawn_sandboxed(argv, workdir, limits=limits, env=env, gpu=gpu, pass_fds=pass_fds,
                               stdout=out, extra_ro_paths=extra_ro_paths)
        timed_out = False
        try:
            try:
                proc.popen.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
                proc.kill(limits.kill_grace_s)
        finally:
            proc.cleanup()
        output = _tail_file(out.name, output_chars)
        memory_exceeded = proc.memory_exceeded()
    return SandboxRun(returncode=proc.popen.returncode, timed_out=timed_out,
                      memory_exceeded=memory_exceeded, wall_s=time.monotonic() - started,
                      output=output, isolation=proc.isolation)
