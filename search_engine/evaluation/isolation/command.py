"""The sandbox's command line: the namespaces (bubblewrap's mount layout, or util-linux
`unshare`) and the stdlib LAUNCHER that joins the cgroups, lowers the rlimits and drops to
uid 65534 right before exec."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
PACKAGE_DIR = REPO_ROOT / "search_engine"


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
    tmpfs_bytes: int = 0   # size of /tmp and /dev/shm (bwrap >= 0.9 `--size`); 0: unsized

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
        size = ["--size", str(self.tmpfs_bytes)] if self.tmpfs_bytes else []
        mount("--perms", "1777", *size, "--tmpfs", "/tmp")
        mount("--perms", "1777", *size, "--tmpfs", "/dev/shm")
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


@functools.lru_cache(maxsize=4)
def bwrap_has_size(bwrap: str | None) -> bool:
    """Does this bubblewrap size its tmpfs mounts (`--size`, bubblewrap 0.9 and later)?"""
    if not bwrap:
        return False
    try:
        help_text = subprocess.run([bwrap, "--help"], capture_output=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return b"--size" in help_text


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
