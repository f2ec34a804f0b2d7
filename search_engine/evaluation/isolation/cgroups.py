"""Per-sandbox cgroups (v2, else v1): a memory limit and a pids limit, created under the
cgroup this process may write to and removed when the sandbox is cleaned up."""

from __future__ import annotations

import os
import secrets
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from search_engine.evaluation.config import SandboxLimits

GiB = 1 << 30


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


def _human(n: int) -> str:
    for unit, size in (("GiB", GiB), ("MiB", 1 << 20)):
        if n >= size and n % (size // 16 or 1) == 0:
            return f"{n / size:g} {unit}"
    return f"{n} bytes"


def _kill(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
