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
"""

from __future__ import annotations

import functools
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from search_engine.evaluation.config import SandboxLimits

BWRAP_ENV = "KERNELHUB_BWRAP"
REPO_ROOT = Path(__file__).resolve().parents[2]
PACKAGE_DIR = REPO_ROOT / "search_engine"
LOCAL_BWRAP = REPO_ROOT / ".tools" / "bwrap" / "usr" / "bin" / "bwrap"
LAYERS = ("user", "pid", "mount", "net", "memory")
WATCHDOG_INTERVAL_S = 0.2
GiB = 1 << 30

# Readable on most hosts or sensitive enough to hide even when unreadable to uid 65534.
ETC_MASKED_FILES = (
    "/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers",
    "/etc/environment", "/etc/security/opasswd", "/etc/machine-id", "/etc/.pwd.lock",
)
ETC_MASKED_DIRS = (
    "/etc/ssh", "/etc/sudoers.d", "/etc/ssl/private", "/etc/postgresql", "/etc/redis",
    "/etc/kernelhub", "/etc/docker", "/etc/credstore", "/etc/credstore.encrypted", "/etc/wireguard",
    "/etc/NetworkManager/system-connections",
)

# Run with `python -I -S -c LAUNCHER <json spec> -- <argv...>`: joins cgroups, lowers rlimits,
# drops to the sandbox uid with no_new_privs, then execs argv. Stdlib only, no site import.
LAUNCHER = r"""
import json, os, sys
spec = json.loads(sys.argv[1])
argv = sys.argv[3:]
if spec.get("nnp"):
    import ctypes  # before the uid drop: the stdlib may be unreadable to the sandbox uid
for path in spec.get("cgroup_procs", ()):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, b"%d\n" % os.getpid())
    finally:
        os.close(fd)
if spec.get("rlimits"):
    import resource
    for name, value in spec["rlimits"].items():
        which = getattr(resource, name)
        soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, value))
drop = spec.get("drop")
if drop:
    uid, gid = drop
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid) or os.getgroups():
        sys.exit("kernelhub sandbox: dropping to uid %d failed" % uid)
    try:
        os.setuid(0)
    except PermissionError:
        pass
    else:
        sys.exit("kernelhub sandbox: could regain root after the uid drop")
if spec.get("nnp"):
    if ctypes.CDLL(None, use_errno=True).prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        sys.exit("kernelhub sandbox: PR_SET_NO_NEW_PRIVS failed")
if spec.get("chdir"):
    os.chdir(spec["chdir"])
os.execvp(argv[0], argv)
"""

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


# ----------------------------------------------------------------------------- cgroups


def _read(path: Path | str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def _write(path: Path | str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def _mountinfo() -> list[tuple[str, str, str, str]]:
    """(root, mount point, fs type, super options) of every mount."""
    mounts = []
    for line in _read("/proc/self/mountinfo").splitlines():
        left, _, right = line.partition(" - ")
        lf, rf = left.split(), right.split()
        if len(lf) >= 5 and len(rf) >= 3:
            mounts.append((lf[3], lf[4].replace("\\040", " "), rf[0], rf[2]))
    return mounts


def _own_cgroups() -> dict[str, str]:
    """controller -> our cgroup path ("" is the unified v2 hierarchy)."""
    own = {}
    for line in _read("/proc/self/cgroup").splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            for ctrl in (parts[1].split(",") if parts[1] else [""]):
                own[ctrl] = parts[2]
    return own


def _our_dir(mount_root: str, mount_point: str, own_path: str | None) -> Path | None:
    if own_path is None:
        return None
    if mount_root == "/":
        rel = own_path
    elif own_path == mount_root or own_path.startswith(mount_root.rstrip("/") + "/"):
        rel = own_path[len(mount_root):]
    else:
        return None
    path = Path(mount_point) / rel.lstrip("/")
    return path if path.is_dir() else None


def _v2_base(controller: str) -> tuple[Path | None, str]:
    """A cgroup2 directory under which a child group gets `controller`, or a reason.

    Our own group first (enabling the controller for its children when it has no processes
    of its own), then the nearest ancestor that already hands the controller to its children
    (cgroup v2's "no internal processes" rule: a group holding processes, like a container's
    own group, cannot); the sandbox's group is then a sibling of ours, still inside the mount.
    """
    own = _own_cgroups().get("")
    reasons = []
    for root, point, fstype, _ in _mountinfo():
        if fstype != "cgroup2":
            continue
        mine = _our_dir(root, point, own)
        if mine is None:
            continue
        if controller not in _read(mine / "cgroup.controllers").split():
            reasons.append(f"{mine}: no {controller} controller")
            continue
        if controller not in _read(mine / "cgroup.subtree_control").split():
            try:
                _write(mine / "cgroup.subtree_control", f"+{controller}")
            except OSError as exc:
                reasons.append(f"{mine}: cannot enable {controller} for children "
                               f"({exc.strerror or exc})")
        base = mine
        while True:
            if controller in _read(base / "cgroup.subtree_control").split() and \
                    os.access(base, os.W_OK):
                return base, ""
            if base == Path(point) or base.parent == base:
                break
            base = base.parent
        reasons.append(f"no writable group between {mine} and {point} hands {controller} "
                       "to its children")
    return None, "; ".join(reasons) or "no cgroup2 hierarchy of ours is mounted"


def _v1_base(controller: str) -> tuple[Path | None, str]:
    own = _own_cgroups().get(controller)
    for root, point, fstype, opts in _mountinfo():
        if fstype == "cgroup" and controller in opts.split(","):
            base = _our_dir(root, point, own)
            if base is not None and os.access(base, os.W_OK):
                return base, ""
            return None, f"cgroup v1 {controller} at {point}: our group is not writable"
    return None, f"no cgroup v1 {controller} controller mounted"


@dataclass
class _Group:
    version: int
    controller: str
    path: Path

    @property
    def procs(self) -> Path:
        return self.path / "cgroup.procs"

    def pids(self) -> list[int]:
        return [int(p) for p in _read(self.procs).split()]

    def kill_all(self) -> None:
        if self.version == 2 and (self.path / "cgroup.kill").exists():
            try:
                _write(self.path / "cgroup.kill", "1")
            except OSError:
                pass
        for pid in self.pids():
            _kill(pid, signal.SIGKILL)

    def remove(self) -> bool:
        deadline = time.monotonic() + 3.0
        while True:
            try:
                self.path.rmdir()
                return True
            except FileNotFoundError:
                return True
            except OSError:
                if time.monotonic() > deadline:
                    return False
                self.kill_all()
                time.sleep(0.05)


def _make_group(version: int, controller: str, base: Path, settings: list[tuple[str, str, bool]]
                ) -> _Group | None:
    """Create base/kernelhub-sbx-... and write (file, value, required) settings; None on failure."""
    path = base / f"kernelhub-sbx-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        path.mkdir()
    except OSError:
        return None
    group = _Group(version, controller, path)
    try:
        for name, value, required in settings:
            target = path / name
            if not target.exists():
                if required:
                    raise OSError(f"{target} missing")
                continue
            try:
                _write(target, value)
            except OSError:
                if required:
                    raise
    except OSError:
        group.remove()
        return None
    return group


def _memory_group(limits: SandboxLimits) -> tuple[_Group | None, str]:
    n = str(int(limits.memory_bytes))
    base, why2 = _v2_base("memory")
    if base is not None:
        group = _make_group(2, "memory", base, [("memory.max", n, True), ("memory.swap.max", "0", False),
                                                ("memory.oom.group", "1", False)])
        if group:
            return group, f"cgroup v2 memory.max = {_human(limits.memory_bytes)} ({group.path})"
    base, why1 = _v1_base("memory")
    if base is not None:
        group = _make_group(1, "memory", base, [("memory.limit_in_bytes", n, True),
                                                ("memory.memsw.limit_in_bytes", n, False)])
        if group:
            memsw = " + memory.memsw.limit_in_bytes" if (group.path / "memory.memsw.limit_in_bytes"
                                                          ).exists() else ""
            return group, (f"cgroup v1 memory.limit_in_bytes{memsw} = "
                           f"{_human(limits.memory_bytes)} ({group.path})")
    return None, f"no memory cgroup (v2: {why2}; v1: {why1 or 'group creation failed'})"


def _pids_group(limits: SandboxLimits) -> tuple[_Group | None, str]:
    n = str(int(limits.max_processes))
    for version, finder in ((2, _v2_base), (1, _v1_base)):
        base, _ = finder("pids")
        if base is not None:
            group = _make_group(version, "pids", base, [("pids.max", n, True)])
            if group:
                return group, f"cgroup v{version} pids.max = {limits.max_processes}"
    return None, ""


# ----------------------------------------------------------------------------- host probe


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


def _human(n: int) -> str:
    for unit, size in (("GiB", GiB), ("MiB", 1 << 20)):
        if n >= size and n % (size // 16 or 1) == 0:
            return f"{n / size:g} {unit}"
    return f"{n} bytes"


# ----------------------------------------------------------------------------- command


@dataclass
class _Plan:
    backend: str           # bwrap | unshare | plain
    tool: str | None
    drop: bool
    net: bool
    gpu: bool
    workdir: Path
    extra_ro_paths: tuple[str, ...]
    rlimits: dict
    cgroup_procs: list[str]
    nnp: bool = True

    def command(self, argv: list[str]) -> list[str]:
        # bwrap sets PR_SET_NO_NEW_PRIVS itself (the probe checks NoNewPrivs): skip ctypes there
        inner = {"rlimits": self.rlimits, "drop": [65534, 65534] if self.drop else None,
                 "nnp": self.nnp and self.backend != "bwrap", "chdir": str(self.workdir)}
        launcher = [sys.executable, "-I", "-S", "-c", LAUNCHER]
        if self.backend == "plain":
            spec = dict(inner, cgroup_procs=self.cgroup_procs)
            return [*launcher, json.dumps(spec), "--", *argv]
        outer = [*launcher, json.dumps({"cgroup_procs": self.cgroup_procs}), "--"] \
            if self.cgroup_procs else []
        if self.backend == "unshare":
            ns = [self.tool, "--pid", "--fork", "--kill-child", "--mount-proc", "--mount", "--ipc",
                  "--uts", *(["--net"] if self.net else [])]
        else:
            ns = [self.tool, *self._bwrap_args()]
        return [*outer, *ns, *launcher, json.dumps(inner), "--", *argv]

    def _bwrap_args(self) -> list[str]:
        a = ["--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
             "--hostname", "kernelhub-sandbox", "--unshare-cgroup-try"]
        if self.net:
            a.append("--unshare-net")
        a += ["--cap-drop", "ALL"]
        if self.drop:  # only the launcher uses these, to drop to uid 65534 before exec
            a += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        bound: list[str] = []   # destinations bound or mounted so far
        made: set[str] = {"/"}

        def parents(dest: str) -> None:
            # bwrap would create missing parents 0700 (unreadable once we are uid 65534)
            parts = Path(dest).parts[1:-1]
            for i in range(len(parts)):
                anc = "/" + "/".join(parts[: i + 1])
                if anc not in made and not _under(anc, bound):
                    a.extend(["--dir", anc])
                    made.add(anc)

        def mount(*args: str) -> None:
            dest = args[-1]
            parents(dest)
            a.extend(args)
            if args[-2] in ("--tmpfs", "--proc", "--dev"):
                made.add(dest)   # empty: what goes under it still needs its parents made
            else:
                bound.append(dest)

        def ro(path: str, try_: bool = True) -> None:
            real = os.path.realpath(path)
            if not os.path.exists(real) or _under(real, bound):
                return
            mount("--ro-bind-try" if try_ else "--ro-bind", real, real)

        ro("/usr", try_=False)
        for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
            p = "/" + name
            if os.path.islink(p):
                a.extend(["--symlink", os.readlink(p), p])
            elif os.path.isdir(p):
                ro(p)
        mount("--ro-bind", "/etc", "/etc")
        # fresh /proc, /dev, /tmp, /dev/shm first: binds below may live under /tmp (the workdir)
        mount("--proc", "/proc")
        mount("--dev", "/dev")
        mount("--perms", "1777", "--tmpfs", "/tmp")
        mount("--perms", "1777", "--tmpfs", "/dev/shm")
        for f in ETC_MASKED_FILES:
            if os.path.isfile(f):
                a.extend(["--ro-bind", "/dev/null", f])
        for d in ETC_MASKED_DIRS:
            if os.path.isdir(d) and not os.path.islink(d):
                a.extend(["--tmpfs", d])
        for p in (sys.base_prefix, sys.base_exec_prefix, sys.prefix, sys.exec_prefix,
                  os.path.dirname(os.path.realpath(sys.executable))):
            ro(p)
        if not os.path.exists(sys.executable) or not _under(sys.executable, bound):
            ro(os.path.dirname(sys.executable))
        mount("--ro-bind", str(PACKAGE_DIR), str(PACKAGE_DIR))
        for p in (*self.extra_ro_paths, *_toolchain_dirs()):
            ro(p)
        if self.gpu:
            for dev in sorted(Path("/dev").glob("nvidia*")):
                a.extend(["--dev-bind", str(dev), str(dev)])
            mount("--ro-bind", "/sys", "/sys")
            for p in ["/run/nvidia-persistenced", *_driver_lib_dirs(),
                      *(os.environ.get(v, "") for v in ("CUDA_HOME", "CUDA_PATH"))]:
                if p:
                    ro(p)
        else:  # CPU topology for torch / OpenMP; nothing else from /sys
            for p in ("/sys/devices/system/cpu", "/sys/devices/system/node"):
                if os.path.isdir(p):
                    mount("--ro-bind", p, p)
        wd = str(self.workdir)
        mount("--bind", wd, wd)
        a += ["--remount-ro", "/"]  # the launcher chdirs after the uid drop
        return a


def _under(path: str, roots: Iterable[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


@functools.lru_cache(maxsize=1)
def _toolchain_dirs() -> tuple[str, ...]:
    """The C compiler's install tree (Triton builds its launcher with it on first use):
    `/opt/gcc` for `/opt/gcc/bin/gcc`; nothing extra for compilers under /usr."""
    dirs = []
    for name in (os.environ.get("CC", ""), os.environ.get("CXX", ""), "cc", "gcc", "g++"):
        found = shutil.which(name) if name else None
        if not found:
            continue
        for path in {found, os.path.realpath(found)}:
            bin_dir = os.path.dirname(path)
            root = os.path.dirname(bin_dir) if os.path.basename(bin_dir) == "bin" else bin_dir
            if root not in ("/", "/usr") and not root.startswith("/usr/") and root not in dirs:
                dirs.append(root)
    return tuple(dirs)


@functools.lru_cache(maxsize=1)
def _driver_lib_dirs() -> tuple[str, ...]:
    """Directories of libcuda / libnvidia-* that ldconfig knows (bound read-only for gpu=True)."""
    ldconfig = shutil.which("ldconfig") or "/sbin/ldconfig"
    try:
        out = subprocess.run([ldconfig, "-p"], capture_output=True, timeout=10).stdout.decode()
    except (OSError, subprocess.TimeoutExpired):
        return ()
    dirs = []
    for line in out.splitlines():
        if ("libcuda" in line or "libnvidia" in line) and "=>" in line:
            d = os.path.dirname(os.path.realpath(line.split("=>", 1)[1].strip()))
            if d not in dirs:
                dirs.append(d)
    return tuple(dirs)


def _prepare_workdir(workdir: Path, drop: bool) -> None:
    """Make the workdir (and what is already in it) the sandbox user's."""
    if not drop:
        return
    for root, dirs, files in os.walk(workdir):
        for name in (*dirs, *files):
            try:
                os.lchown(os.path.join(root, name), 65534, 65534)
            except OSError:
                pass
    os.chown(workdir, 65534, 65534)


# ----------------------------------------------------------------------------- processes


def _kill(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _descendants(root: int) -> list[int]:
    """Every live descendant of `root` (host PIDs), children before grandchildren."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        stat = _read(f"/proc/{entry}/stat")
        if not stat:
            continue
        try:
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
        except (IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, frontier = [], [root]
    while frontier:
        nxt = []
        for pid in frontier:
            nxt.extend(children.get(pid, ()))
        out.extend(nxt)
        frontier = nxt
    return out


def _tree_rss(root: int) -> int:
    page = os.sysconf("SC_PAGE_SIZE")
    total = 0
    for pid in (root, *_descendants(root)):
        fields = _read(f"/proc/{pid}/statm").split()
        if len(fields) > 1:
            total += int(fields[1]) * page
    return total


@dataclass
class SandboxedProcess:
    popen: subprocess.Popen
    isolation: dict
    memory_bytes: int = 0
    _groups: list = field(default_factory=list, repr=False)
    _memory_group: _Group | None = field(default=None, repr=False)
    _memory_mode: str = "none"  # cgroup | rlimit | watchdog | none
    _output_path: str | None = None
    _watchdog: threading.Thread | None = field(default=None, repr=False)
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)
    _watchdog_fired: bool = False
    _oom_seen: bool = False
    _cleaned: bool = False

    @property
    def pid(self) -> int:
        return self.popen.pid

    def memory_exceeded(self) -> bool:
        """True when the memory limit killed the process (or it died of a MemoryError)."""
        if self._watchdog_fired or self._oom_seen:
            return True
        g = self._memory_group
        if g is not None:
            if g.version == 2:
                events = dict(line.split() for line in _read(g.path / "memory.events").splitlines()
                              if len(line.split()) == 2)
                hit = int(events.get("oom_kill", 0)) > 0 or int(events.get("oom_group_kill", 0)) > 0
            else:
                ctl = dict(line.split() for line in _read(g.path / "memory.oom_control").splitlines()
                           if len(line.split()) == 2)
                hit = int(ctl.get("oom_kill", 0)) > 0
                if "oom_kill" not in ctl:  # old kernels: the limit was hit and it died of SIGKILL
                    hit = int(_read(g.path / "memory.failcnt") or 0) > 0 and \
                        self.popen.returncode in (-9, 137)
            self._oom_seen = hit
            return hit
        if self._memory_mode == "rlimit" and self._output_path:
            tail = _tail_file(self._output_path, 8000)
            return "MemoryError" in tail
        return False

    def _watch(self, interval: float) -> None:
        while not self._stop.wait(interval):
            if self.popen.poll() is not None:
                return
            try:
                rss = _tree_rss(self.popen.pid)
            except OSError:
                continue
            if rss > self.memory_bytes:
                self._watchdog_fired = True
                self._kill_now()
                return

    def _all_pids(self) -> list[int]:
        # descendants only while our child is unreaped (its pid cannot have been reused)
        pids = _descendants(self.popen.pid) if self.popen.returncode is None else []
        for g in self._groups:
            pids.extend(p for p in g.pids() if p not in pids)
        return pids

    def _kill_now(self) -> None:
        try:  # its session's process group (members keep the pgid from being reused)
            os.killpg(self.popen.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self.popen.poll() is None:
            _kill(self.popen.pid, signal.SIGKILL)
        for pid in self._all_pids():
            _kill(pid, signal.SIGKILL)
        for g in self._groups:
            g.kill_all()

    def kill(self, grace_s: float) -> None:
        """SIGTERM everything the sandbox started, SIGKILL what is left after `grace_s`."""
        if self.popen.poll() is None:
            for pid in self._all_pids():
                _kill(pid, signal.SIGTERM)
            if self.isolation.get("pid_namespace") is False:
                try:
                    os.killpg(self.popen.pid, signal.SIGTERM)
                except (ProcessLookupError, PermissionError):
                    pass
            try:
                self.popen.wait(timeout=max(grace_s, 0))
            except subprocess.TimeoutExpired:
                pass
        self._kill_now()
        try:
            self.popen.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass

    def cleanup(self) -> None:
        """Stop the watchdog, kill leftovers, remove the cgroups. Idempotent."""
        if self._cleaned:
            return
        self._stop.set()
        if self._watchdog is not None and self._watchdog is not threading.current_thread():
            self._watchdog.join(timeout=2)
        if self.popen.poll() is None:
            self._kill_now()
            try:
                self.popen.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        else:  # the main process is gone; anything left behind goes too
            for pid in self._all_pids():
                _kill(pid, signal.SIGKILL)
        self.memory_exceeded()  # latch the verdict before the cgroup disappears
        for g in self._groups:
            g.remove()
        self._memory_group = None
        self._cleaned = True


def _tail_file(path: str, limit: int) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit * 4))
            text = f.read().decode(errors="replace")
    except OSError:
        return ""
    return text if len(text) <= limit else "[... truncated ...]\n" + text[-limit:]


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
        return SandboxedProcess(popen=popen, isolation=report, memory_bytes=limits.memory_bytes)
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
        "RLIMIT_FSIZE": limits.max_file_bytes,
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
                 cgroup_procs=[str(g.procs) for g in groups])
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
    return proc


def _nproc_limit(limits: SandboxLimits, has_pids_cgroup: bool) -> int:
    if has_pids_cgroup:
        return max(4 * limits.max_processes, 4096)
    return limits.max_processes


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
