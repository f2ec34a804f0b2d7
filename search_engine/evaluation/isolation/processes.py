"""A started sandbox (`SandboxedProcess`): its process tree, the RSS watchdog, the kill /
cleanup sequence and the verdict on whether its memory limit killed it."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from dataclasses import dataclass, field

from search_engine.evaluation.isolation.cgroups import _Group, _kill, _read
from search_engine.evaluation.isolation.untrusted_files import read_untrusted

WATCHDOG_INTERVAL_S = 0.2
DISK_WATCH_INTERVAL_S = 0.25
DISK_MAX_ENTRIES = 100_000  # files and directories in a workdir: more is an inode flood
DISK_FULL_MARKERS = ("No space left on device", "File too large", "Disk quota exceeded")


def disk_full_in(log: str) -> str:
    """'a write failed: ...' when the sandbox's output says a write ran out of room."""
    found = [marker for marker in DISK_FULL_MARKERS if marker in log]
    return f"a write failed: {found[0]}" if found else ""


def workdir_usage(workdir: str, max_entries: int = DISK_MAX_ENTRIES) -> tuple[int, int]:
    """(bytes allocated, entries) under `workdir`, links never followed; stops counting
    at `max_entries` so a flood of empty files cannot stall the watcher."""
    used = entries = 0
    stack = [workdir]
    while stack and entries <= max_entries:
        try:
            with os.scandir(stack.pop()) as it:
                for entry in it:
                    entries += 1
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    used += info.st_blocks * 512
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
        except OSError:
            continue
    return used, entries


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
    disk_bytes: int = 0
    _workdir: str | None = None
    _disk_fired: str = ""
    _watchdog: threading.Thread | None = field(default=None, repr=False)
    _disk_watcher: threading.Thread | None = field(default=None, repr=False)
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

    def disk_exceeded(self) -> str:
        """Why the workdir's disk limit stopped the sandbox ('' when it did not): the
        watcher killed it, or a write failed for lack of space (the log says so)."""
        if self._disk_fired:
            return self._disk_fired
        if self._output_path and self.disk_bytes:
            return disk_full_in(_tail_file(self._output_path, 8000))
        return ""

    def _watch_disk(self, interval: float) -> None:
        while not self._stop.wait(interval):
            if self.popen.poll() is not None:
                return
            used, entries = workdir_usage(self._workdir)
            if used > self.disk_bytes or entries > DISK_MAX_ENTRIES:
                self._disk_fired = (f"its workdir held {used / (1 << 20):.0f} MiB in {entries} "
                                    f"entries (limit {self.disk_bytes / (1 << 20):.0f} MiB, "
                                    f"{DISK_MAX_ENTRIES} entries)")
                self._kill_now()
                return

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
        for watcher in (self._watchdog, self._disk_watcher):
            if watcher is not None and watcher is not threading.current_thread():
                watcher.join(timeout=2)
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
    """The end of a log the sandbox may have replaced: never through a link, never a FIFO."""
    try:
        data = read_untrusted(path, limit * 4, tail=True)
    except OSError:
        return ""
    text = data.decode(errors="replace")
    return text if len(text) <= limit else "[... truncated ...]\n" + text[-limit:]
