"""Which isolation layers work on this host: find bubblewrap, run a probe sandbox through the
real command builder once per host, and report each layer truthfully (`probe`)."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from search_engine.evaluation.config import SandboxLimits
from search_engine.evaluation.isolation.cgroups import _human, _memory_group, _pids_group
from search_engine.evaluation.isolation.command import REPO_ROOT, _Plan, _prepare_workdir
from search_engine.evaluation.isolation.processes import WATCHDOG_INTERVAL_S

BWRAP_ENV = "KERNELHUB_BWRAP"
LOCAL_BWRAP = REPO_ROOT / ".tools" / "bwrap" / "usr" / "bin" / "bwrap"
LAYERS = ("user", "pid", "mount", "net", "memory")


# Runs inside a probe sandbox: what the candidate would see.
PROBE_SCRIPT = r"""
import json, os, socket, sys
r = {"uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(), "pid": os.getpid()}
r["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
try:
    r["ifaces"] = [name for _, name in socket.if_nameindex()]
except OSError as exc:
    r["ifaces"] = "error: %s" % exc
try:
    open("/kernelhub-probe-write", "w").close()
    r["root_writable"] = True
except OSError:
    r["root_writable"] = False
try:
    r["repo_entries"] = sorted(os.listdir(sys.argv[1]))
except OSError as exc:
    r["repo_entries"] = "error: %s" % exc
for line in open("/proc/self/status"):
    if line.startswith(("CapEff:", "NoNewPrivs:")):
        key, value = line.split(":", 1)
        r[key] = value.strip()
print("KERNELHUB-PROBE " + json.dumps(r))
"""


def _find_bwrap() -> tuple[str | None, list[str]]:
    notes = []
    explicit = os.environ.get(BWRAP_ENV)
    if explicit:
        if os.path.isfile(explicit) and os.access(explicit, os.X_OK):
            return explicit, notes
        notes.append(f"{BWRAP_ENV}={explicit} is not an executable file")
    found = shutil.which("bwrap")
    if found:
        return found, notes
    if LOCAL_BWRAP.is_file() and os.access(LOCAL_BWRAP, os.X_OK):
        return str(LOCAL_BWRAP), notes
    notes.append(f"bwrap not on PATH nor at {LOCAL_BWRAP}")
    return None, notes


def _probe_run(backend: str, tool: str | None) -> tuple[dict | None, str]:
    """Run PROBE_SCRIPT through the real command builder (dropping to uid 65534 when root; if
    that cannot run Python, e.g. the interpreter lives under /root, once more without)."""
    seen, err = _probe_run_once(backend, tool, drop=os.geteuid() == 0)
    if seen is None and os.geteuid() == 0:
        seen, err2 = _probe_run_once(backend, tool, drop=False)
        if seen is not None:
            seen["uid_drop_failed"] = err
            return seen, ""
        err = f"{err}; without the uid drop: {err2}"
    return seen, err


def _probe_run_once(backend: str, tool: str | None, drop: bool) -> tuple[dict | None, str]:
    workdir = Path(tempfile.mkdtemp(prefix="kernelhub-probe-"))
    try:
        plan = _Plan(backend=backend, tool=tool, drop=drop, net=True, gpu=False,
                     workdir=workdir, extra_ro_paths=(), rlimits={}, cgroup_procs=[])
        _prepare_workdir(workdir, plan.drop)
        argv = [sys.executable, "-I", "-S", "-c", PROBE_SCRIPT, str(REPO_ROOT)]
        try:
            done = subprocess.run(plan.command(argv), cwd=workdir, env={"PATH": "/usr/bin:/bin"},
                                  stdin=subprocess.DEVNULL, capture_output=True, timeout=30,
                                  start_new_session=True)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return None, f"{backend} probe failed: {exc}"
        for line in done.stdout.decode(errors="replace").splitlines():
            if line.startswith("KERNELHUB-PROBE "):
                return json.loads(line.split(" ", 1)[1]), ""
        err = (done.stderr or done.stdout).decode(errors="replace").strip()[-300:]
        return None, f"{backend} probe exited {done.returncode}: {err}"
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


@functools.lru_cache(maxsize=16)
def _host_facts(bwrap_env: str | None, path_env: str | None, euid: int) -> dict:
    facts: dict = {"root": euid == 0, "notes": []}
    bwrap, notes = _find_bwrap()
    facts["notes"] += notes
    facts["bwrap"] = None
    if bwrap:
        seen, err = _probe_run("bwrap", bwrap)
        if seen is not None:
            facts["bwrap"], facts["seen"] = bwrap, seen
            try:
                version = subprocess.run([bwrap, "--version"], capture_output=True, timeout=10)
                facts["bwrap_version"] = version.stdout.decode().strip()
            except (OSError, subprocess.TimeoutExpired):
                facts["bwrap_version"] = "bwrap"
        else:
            facts["notes"].append(err)
    facts["unshare"] = None
    unshare = shutil.which("unshare")
    if facts["bwrap"] is None and unshare and euid == 0:
        seen, err = _probe_run("unshare", unshare)
        if seen is not None:
            facts["unshare"], facts["seen"] = unshare, seen
        else:
            facts["notes"].append(err)
    facts["backend"] = "bwrap" if facts["bwrap"] else ("unshare" if facts["unshare"] else "plain")
    if facts["backend"] == "plain" and euid == 0:
        seen, err = _probe_run("plain", None)
        if seen is not None:
            facts["seen"] = seen
        else:
            facts["notes"].append(err)
    return facts


def _memory_facts(limits: SandboxLimits) -> str | None:
    """Description of the cgroup memory limit this host gives (by creating and removing one)."""
    group, text = _memory_group(limits)
    if group is None:
        return None
    group.remove()
    return text.rsplit(" (", 1)[0]


def _pids_facts(limits: SandboxLimits) -> str | None:
    group, text = _pids_group(limits)
    if group is None:
        return None
    group.remove()
    return text


@functools.lru_cache(maxsize=64)
def _probe_cached(key: tuple, limits: SandboxLimits, gpu: bool) -> dict:
    facts = _host_facts(*key[:3])
    return _report(limits, facts, gpu, _memory_facts(limits), _pids_facts(limits))


def probe(limits: SandboxLimits, gpu: bool = False) -> dict:
    """Which layers work on this host for these limits (probed once per host and key)."""
    key = (os.environ.get(BWRAP_ENV), os.environ.get("PATH"), os.geteuid())
    return dict(_probe_cached(key, limits, gpu))


def _report(limits: SandboxLimits, facts: dict, gpu: bool, memory_cgroup: str | None,
            pids_cgroup: str | None) -> dict:
    backend = facts["backend"]
    seen = facts.get("seen") or {}
    want_net = limits.network != "off"
    rep: dict = {"mode": limits.isolation}
    if limits.isolation == "off":
        rep.update(backend="subprocess (isolation off)", user=_user_text(False),
                   pid_namespace=False, mount_namespace="none (host filesystem)",
                   network_namespace=False, network_isolated=False,
                   network="host network (isolation off)",
                   memory_limit="none (isolation off)", process_limit="none (isolation off)",
                   layers_missing=list(LAYERS))
        return rep
    dropped = seen.get("uid") == 65534 and seen.get("CapEff", "").strip("0") == ""
    rep["backend"] = {"bwrap": facts.get("bwrap_version", "bwrap") + f" ({facts['bwrap']})",
                      "unshare": f"util-linux unshare ({facts['unshare']})",
                      "plain": "subprocess in its own session (no namespaces available)"}[backend]
    rep["user"] = _user_text(dropped, seen.get("NoNewPrivs") == "1")
    pids = seen.get("pids") or []
    pid_ns = backend in ("bwrap", "unshare") and bool(pids) and max(pids) < 100
    rep["pid_namespace"] = pid_ns
    if backend == "bwrap" and not seen.get("root_writable", True):
        rep["mount_namespace"] = ("read-only root; writable: workdir, private tmpfs /tmp and "
                                  "/dev/shm; repo shows only " + ", ".join(
                                      seen.get("repo_entries") or []))
        mount_ok = True
    elif backend == "unshare":
        rep["mount_namespace"] = ("private mount namespace with a new /proc only: host filesystem "
                                  "visible (uid 65534 permissions apply)")
        mount_ok = False
    else:
        rep["mount_namespace"] = "none (host filesystem)"
        mount_ok = False
    ifaces = seen.get("ifaces")
    net_ok = backend in ("bwrap", "unshare") and isinstance(ifaces, list) and set(ifaces) <= {"lo"}
    rep["network_namespace"] = net_ok and want_net
    rep["network_isolated"] = net_ok and want_net
    rep["network"] = ("own namespace: loopback only, no host interfaces or unix sockets"
                      if net_ok and want_net else
                      "host network (disabled by config)" if not want_net else
                      "host network: no network namespace available")
    if memory_cgroup:
        rep["memory_limit"] = memory_cgroup
    elif not gpu:
        rep["memory_limit"] = f"RLIMIT_AS = {_human(limits.memory_bytes)} per process"
    else:
        rep["memory_limit"] = (f"watchdog on RSS of the process tree every {WATCHDOG_INTERVAL_S} s, "
                               f"{_human(limits.memory_bytes)}")
    nproc = (f"RLIMIT_NPROC = {_nproc_limit(limits, bool(pids_cgroup))} (uid 65534, shared by "
             "all sandboxes)" if dropped else "RLIMIT_NPROC (not enforced: runs as root)")
    rep["process_limit"] = f"{pids_cgroup}; {nproc}" if pids_cgroup else nproc
    rep["gpu"] = "nvidia devices, read-only /sys and driver libraries" if gpu else "none"
    missing = []
    if not dropped:
        missing.append("user")
    if not pid_ns:
        missing.append("pid")
    if not mount_ok:
        missing.append("mount")
    if want_net and not net_ok:
        missing.append("net")
    if not memory_cgroup and gpu:
        missing.append("memory")  # a watchdog polls: it can be outrun
    elif not memory_cgroup and not gpu:
        pass  # RLIMIT_AS bounds every process
    rep["layers_missing"] = missing
    if facts["notes"]:
        rep["notes"] = list(facts["notes"])
    return rep


def _user_text(dropped: bool, nnp: bool = False) -> str:
    if dropped:
        return "uid 65534 (unprivileged), no capabilities" + (", no_new_privs" if nnp else "")
    return f"uid {os.geteuid()} (same as the parent{': root' if os.geteuid() == 0 else ''})"


def _nproc_limit(limits: SandboxLimits, has_pids_cgroup: bool) -> int:
    if has_pids_cgroup:
        return max(4 * limits.max_processes, 4096)
    return limits.max_processes
