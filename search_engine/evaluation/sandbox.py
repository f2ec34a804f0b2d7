"""Run untrusted candidate code in a fresh, limited subprocess.

Each run gets: its own process group (timeouts kill the whole group: SIGTERM, a grace
period, then SIGKILL), resource limits (processes, open files, file size, CPU seconds;
not address space, which CUDA needs), an environment built from an allow-list (API keys,
database URLs and tokens never reach it), its own temporary working, home, Triton-cache
and Inductor-cache directories, and no network when `unshare -n` works on this host.

The child talks to the parent over one socket (`SandboxSession`, frames from `wire`); its
own prints go to a log file. The strong layers (user, PID, mount and network namespaces,
a memory limit) come from `isolation`; this module falls back to a process group,
rlimits and `unshare -n` where that module cannot run.

The child's environment comes from `sandbox_environment`; warm single-use sessions from
`sandbox_pool` (which imports this module; never the other way round).
"""

from __future__ import annotations

import os
import select
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from search_engine.evaluation.config import SandboxLimits
from search_engine.evaluation.isolation.processes import disk_full_in
from search_engine.evaluation.isolation.untrusted_files import create_fresh, read_fd_tail
from search_engine.evaluation.sandbox_environment import (
    ENV_ALLOWLIST,
    REPO_ROOT,
    SECRET_PATTERN,
    clean_environment,
    network_isolation_available,
    redact,
)

__all__ = [  # the environment's names are re-exported: callers import them from here
    "ENV_ALLOWLIST", "REPO_ROOT", "SECRET_PATTERN", "ProtocolViolation", "SandboxDied",
    "SandboxOutcome", "SandboxSession", "SandboxTimeout", "clean_environment", "make_workdir",
    "network_isolation_available", "redact", "run_sandboxed_command", "spawn",
]


class SandboxDied(RuntimeError):
    """The sandboxed process went away before answering."""


class SandboxTimeout(RuntimeError):
    """The sandboxed process used up its time budget."""


class ProtocolViolation(RuntimeError):
    """A frame the honest harness would never send: out of order, unsolicited or malformed."""


class SandboxSession:
    """One sandboxed process (`python -m <module>`) answering requests over a socket.

    Only the time spent waiting for the child counts against `timeout_s`: the parent may
    take the GPU timing lock between requests without charging the candidate. Every reply
    must answer the request just sent, and nothing may arrive unasked.
    """

    def __init__(self, module: str, args: list[str], workdir: Path, *, timeout_s: float,
                 limits: SandboxLimits, env_extra: dict[str, str] | None = None,
                 gpu: bool = False, log_chars: int = 4000, wrapper: list[str] | None = None,
                 extra_ro_paths: tuple[str, ...] = ()):
        self.module, self.args, self.workdir = module, args, workdir
        self.budget_s, self.limits, self.gpu = timeout_s, limits, gpu
        self.env_extra, self.log_chars, self.wrapper = env_extra, log_chars, wrapper
        self.extra_ro_paths = extra_ro_paths
        self.used_s = 0.0
        self.sock = None
        self.process = None
        self.isolation: dict = {}
        self._next_id = 0
        self._log_fd: int | None = None
        self.ready: dict = {}

    # -- life cycle
    @property
    def started(self) -> bool:
        return bool(self.ready)

    @property
    def alive(self) -> bool:
        """Started and still running (a warm sandbox can die while it waits to be taken)."""
        return self.started and self.process is not None and self.process.popen.poll() is None

    def start(self) -> dict:
        import search_engine.evaluation.wire as wire
        from search_engine.evaluation.cancellation import track

        track(self)  # the running evaluation's scope may kill it (a search out of time)
        parent_sock, child_sock = socket.socketpair()
        self.sock = parent_sock
        argv = [*(self.wrapper or []), sys.executable, "-m", self.module,
                "--sock", str(child_sock.fileno()), *self.args]
        env = clean_environment(self.workdir, self.env_extra)
        env["KERNELHUB_SANDBOX_TIMEOUT_S"] = str(self.budget_s)
        log = _fresh_log(self.workdir / "child.log")
        self._log_fd = os.dup(log.fileno())  # read back through this, never by path
        try:
            self.process = spawn(argv, self.workdir, limits=self.limits, env=env, gpu=self.gpu,
                                 pass_fds=(child_sock.fileno(),), stdout=log,
                                 extra_ro_paths=self.extra_ro_paths)
        finally:
            log.close()
            child_sock.close()
        self.isolation = self.process.isolation
        header, _ = self._receive(wire, 1 << 20)
        if header.get("kind") != "ready":
            raise ProtocolViolation(f"expected the harness's ready message, got {header.get('kind')!r}")
        self.ready = header
        return header

    def request(self, kind: str, header: dict | None = None, tensors: list | None = None,
                max_reply_bytes: int = 1 << 20, fds: list[int] | None = None,
                max_reply_fds: int = 0) -> tuple[dict, list]:
        """Send one request (with shared buffers' `fds`, see `device_share`) and return its
        reply; descriptors that come back are in `reply["fds"]`, the caller's to close."""
        import search_engine.evaluation.wire as wire

        self._expect_silence()
        self._next_id += 1
        rid = self._next_id
        try:
            wire.send(self.sock, {**(header or {}), "kind": kind, "id": rid}, tensors, fds)
        except OSError as exc:
            raise SandboxDied(f"the sandbox closed its socket ({exc})") from None
        reply, out = self._receive(wire, max_reply_bytes, max_reply_fds)
        expected = "bye" if kind == "exit" else "reply"
        if reply.get("kind") != expected or reply.get("re") != rid:
            wire.close_fds(reply.get("fds", []))
            raise ProtocolViolation(
                f"request {rid} ({kind}) was answered by a {reply.get('kind')!r} message for "
                f"request {reply.get('re')!r}")
        return reply, out

    def renew(self, timeout_s: float) -> None:
        """A long-lived session (the problem's, shared by many candidates) gets a fresh time
        budget for its next requests."""
        self.budget_s, self.used_s = timeout_s, 0.0

    def _receive(self, wire, max_bytes: int, max_fds: int = 0) -> tuple[dict, list]:
        remaining = self.budget_s - self.used_s
        if remaining <= 0:
            raise SandboxTimeout("time budget used up")
        self.sock.settimeout(remaining)
        t0 = time.monotonic()
        try:
            return wire.recv(self.sock, max_bytes, max_fds)
        except socket.timeout:
            raise SandboxTimeout("time budget used up") from None
        except wire.ProtocolError as exc:
            raise ProtocolViolation(str(exc)) from None
        except (EOFError, ConnectionError, OSError) as exc:
            raise SandboxDied(str(exc) or "the sandbox closed its socket") from None
        finally:
            self.used_s += time.monotonic() - t0

    def _expect_silence(self) -> None:
        """Bytes waiting before a request was sent were not asked for."""
        ready, _, _ = select.select([self.sock], [], [], 0)
        if not ready:
            return
        try:
            peek = self.sock.recv(1, socket.MSG_PEEK)
        except OSError:
            return
        if peek:
            raise ProtocolViolation("the sandbox sent a message nobody asked for")

    def kill(self) -> None:
        """Stop the child now, from any thread (its evaluation was cancelled): a wait on it
        fails at once, and a session not started yet never starts."""
        self.budget_s = 0.0
        if self.process is not None:
            self.process.kill(0.0)

    def close_later(self) -> SandboxOutcome:
        """The outcome now (log and isolation as they are); the process is reaped in the
        background. For a child that already said goodbye: its exit (CUDA context
        teardown) must not hold up the result. Memory-limit kills are not looked for."""
        import threading

        if self.sock is not None:
            self.sock.close()
            self.sock = None
        outcome = SandboxOutcome(returncode=None, timed_out=False, wall_s=self.used_s,
                                 log=redact(_tail(self._log_fd, self.log_chars)),
                                 isolation=self.isolation, memory_exceeded=False)
        threading.Thread(target=self.close, daemon=True, name="kernelhub-sandbox-reap").start()
        return outcome

    def close(self) -> SandboxOutcome:
        """Ask the child to exit, then kill whatever is left; the outcome carries the log."""
        timed_out = self.used_s >= self.budget_s
        if self.sock is not None:
            self.sock.close()
        returncode, memory, disk = None, False, ""
        if self.process is not None:
            proc = self.process
            try:
                proc.popen.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                pass
            proc.kill(self.limits.kill_grace_s)
            memory = proc.memory_exceeded()
            proc.cleanup()
            disk = proc.disk_exceeded()
            returncode = proc.popen.returncode
        log = redact(_tail(self._log_fd, self.log_chars))
        disk = disk or disk_full_in(log)
        if self._log_fd is not None:
            os.close(self._log_fd)
            self._log_fd = None
        return SandboxOutcome(returncode=returncode, timed_out=timed_out, wall_s=self.used_s,
                              log=log, isolation=self.isolation, memory_exceeded=memory,
                              disk_exceeded=disk)

    def __enter__(self) -> SandboxSession:
        return self

    def __exit__(self, *exc) -> None:
        self.outcome = self.close()



@dataclass
class SandboxOutcome:
    returncode: int | None
    timed_out: bool
    wall_s: float
    log: str
    isolation: dict = field(default_factory=dict)
    memory_exceeded: bool = False
    disk_exceeded: str = ""  # why the workdir's disk limit stopped it ('' when it did not)




def spawn(argv: list[str], workdir: Path, *, limits: SandboxLimits, env: dict[str, str],
          gpu: bool, pass_fds: tuple[int, ...], stdout, extra_ro_paths: tuple[str, ...] = ()):
    """Start `argv` in the strongest sandbox this host offers (see `isolation`)."""
    from search_engine.evaluation.isolation import spawn_sandboxed

    return spawn_sandboxed(argv, workdir, limits=limits, env=env, gpu=gpu, pass_fds=pass_fds,
                           stdout=stdout, extra_ro_paths=extra_ro_paths)


def run_sandboxed_command(argv: list[str], workdir: Path, *, timeout_s: float,
                          limits: SandboxLimits, env_extra: dict[str, str] | None = None,
                          gpu: bool = False, extra_ro_paths: tuple[str, ...] = (),
                          log_chars: int = 4000) -> SandboxOutcome:
    """Run a command to completion in the sandbox (no socket): e.g. ncu around a replay."""
    env = clean_environment(workdir, env_extra)
    env["KERNELHUB_SANDBOX_TIMEOUT_S"] = str(timeout_s)
    started = time.monotonic()
    with _fresh_log(workdir / "command.log") as log:
        log_fd = os.dup(log.fileno())
        proc = spawn(argv, workdir, limits=limits, env=env, gpu=gpu, pass_fds=(), stdout=log,
                     extra_ro_paths=extra_ro_paths)
    from search_engine.evaluation.cancellation import track

    track(_Killable(proc))  # a cancelled evaluation (a search out of time) ends it at once
    timed_out = False
    try:
        proc.popen.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        proc.kill(limits.kill_grace_s)
        memory = proc.memory_exceeded()
        proc.cleanup()
        log = redact(_tail(log_fd, log_chars))
        disk = proc.disk_exceeded() or disk_full_in(log)
        os.close(log_fd)
    return SandboxOutcome(returncode=proc.popen.returncode, timed_out=timed_out,
                          wall_s=time.monotonic() - started, log=log, isolation=proc.isolation,
                          memory_exceeded=memory, disk_exceeded=disk)


class _Killable:
    """A command's sandboxed process as a cancel scope holds it (`cancellation`)."""

    def __init__(self, proc):
        self.proc = proc

    def kill(self) -> None:
        self.proc.kill(0.0)


def _fresh_log(path: Path):
    """The child's stdout: a file the parent creates (a planted link or FIFO at `path` is
    removed, never followed) and later reads through its own descriptor."""
    return os.fdopen(create_fresh(path, 0o644), "wb")


def _tail(fd: int | None, limit: int) -> str:
    """The log's last `limit` characters, read through the parent's descriptor (bounded:
    the child may have written gigabytes)."""
    if fd is None:
        return ""
    try:
        data = read_fd_tail(fd, limit * 4)
    except OSError:
        return ""
    text = data.decode(errors="replace")
    return text if len(text) <= limit else "[... truncated ...]\n" + text[-limit:]


def make_workdir(prefix: str = "kernelhub-eval-") -> Path:
    return Path(tempfile.mkdtemp(prefix=prefix))
