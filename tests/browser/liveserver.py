"""A real KernelHub server for browser tests and the UI benchmark, in its own process.

It runs the embedded default exactly as `make run` does (daphne, SQLite under a fresh data
dir, the in-memory channel layer, session runners as threads) and takes commands as JSON
lines on stdin, so a test can publish session events *inside* the server process, the
way the runner does:

    {"cmd": "create_session", "team": "alpha", "budget": 8, "precision_policy": "strict"}
                                                               -> {"session": pk}
    {"cmd": "publish", "session": pk, "events": [[type, payload], ...]}
        -> {"seqs": [...], "published_ms": [...]}
    {"cmd": "create_candidate", "session": pk, "node_id": "1", ...Candidate fields}
                                                               -> {"candidate": pk}
    {"cmd": "session", "session": pk}                          -> {"status": ..., "evaluated": ...}
    {"cmd": "propose", "candidate": pk}   (in the review queue)   -> {"review": review pk}
    {"cmd": "approve", "candidate": pk}   (proposed and approved)   -> {"kernel": review pk}
    {"cmd": "create_problem", "name": ..., "asked": bool}   (coverage not checked)   -> {"problem": pk}
    {"cmd": "create_document", "title": ..., ...Document fields}   -> {"document": pk}

Users: "<team>-<role>" with password "pw-<role>" for teams alpha and beta (as tests/conftest.py).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROLES = ("viewer", "engineer", "reviewer", "admin")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LiveServer:
    """Start the server process; `command()` talks to it. Use as a context manager."""

    def __init__(self, data_dir: str | None = None, env: dict | None = None,
                 startup_timeout_s: float = 90.0):
        self.owns_data_dir = data_dir is None
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="kernelhub-live-")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, "KERNELHUB_DATA_DIR": self.data_dir, "DEBUG": "1",
                    "KERNELHUB_EXECUTOR": "local", "REDIS_URL": "", "DATABASE_URL": "",
                    "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", **(env or {})}
        self.startup_timeout_s = startup_timeout_s
        self._lock = threading.Lock()

    def __enter__(self) -> "LiveServer":
        self.log = open(Path(self.data_dir) / "server.log", "w")
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--port", str(self.port)], cwd=REPO, env=self.env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True, bufsize=1)
        ready = self._read(self.startup_timeout_s)
        if not ready.get("ready"):
            raise RuntimeError(f"server did not start: {ready}; see {self.log.name}")
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            time.sleep(0.1)
        raise RuntimeError(f"server never listened on {self.port}; see {self.log.name}")

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()
        if self.owns_data_dir and not any(exc):
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def command(self, cmd: str, timeout_s: float = 60.0, **kwargs) -> dict:
        with self._lock:
            self.proc.stdin.write(json.dumps({"cmd": cmd, **kwargs}) + "\n")
            self.proc.stdin.flush()
            answer = self._read(timeout_s)
        if "error" in answer:
            raise RuntimeError(f"server command {cmd} failed: {answer['error']}")
        return answer

    def _read(self, timeout_s: float) -> dict:
        result: dict = {}

        def reader():
            line = self.proc.stdout.readline()
            result.update(json.loads(line) if line else {"error": "server exited"})

        thread = threading.Thread(target=reader, daemon=True)
        thread.start()
        thread.join(timeout_s)
        if thread.is_alive():
            return {"error": f"no answer within {timeout_s} s"}
        return result

    def server_log(self) -> str:
        self.log.flush()
        return Path(self.log.name).read_text()[-5000:]


# --- inside the server process ------------------------------------------------------------------

def _setup_data() -> None:
    import hashlib

    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from kernelhub.optimization.models import Problem
    from kernelhub.optimization.services import hardware_targets_sync
    from kernelhub.teams.services import membership_set, team_create

    call_command("migrate", verbosity=0, interactive=False)
    call_command("collectstatic", verbosity=0, interactive=False)  # as `make run` does
    hardware_targets_sync()
    User = get_user_model()
    for team_name in ("alpha", "beta"):
        team = team_create(name=team_name)
        for role in ROLES:
            user = User.objects.create_user(username=f"{team_name}-{role}", password="pw-" + role)
            membership_set(team=team, user=user, role=role)
    source = (REPO / "tests" / "tiny_problem.py").read_text()
    Problem.objects.create(name="tiny-relu", family="elementwise", source=source,
                           source_sha256=hashlib.sha256(source.encode()).hexdigest())


def _handle(command: dict) -> dict:
    from kernelhub.optimization.events import publish_session_event
    from kernelhub.optimization.models import HardwareTarget, Problem, SearchSession
    from kernelhub.teams.models import Team

    if command["cmd"] == "create_session":
        team = Team.objects.get(name=command.get("team", "alpha"))
        session = SearchSession.objects.create(
            team=team, problem=Problem.objects.get(name="tiny-relu"),
            hardware=HardwareTarget.objects.get(name=command.get("hardware", "interpreter")),
            budget_evaluations=command.get("budget", 24), status=command.get("status", "running"),
            best_speedup_vs_eager=command.get("best_speedup_vs_eager"),
            precision_policy=command.get("precision_policy", "strict"))
        return {"session": session.pk}
    if command["cmd"] == "create_candidate":
        from kernelhub.optimization.models import Candidate

        fields = {k: v for k, v in command.items() if k not in ("cmd", "session")}
        candidate = Candidate.objects.create(session_id=command["session"], **fields)
        return {"candidate": candidate.pk}
    if command["cmd"] == "propose":
        from django.contrib.auth import get_user_model

        from kernelhub.optimization.models import Candidate
        from kernelhub.review.services import kernel_propose

        candidate = Candidate.objects.get(pk=command["candidate"])
        engineer = get_user_model().objects.get(username=f"{candidate.session.team.name}-engineer")
        return {"review": kernel_propose(candidate=candidate, user=engineer).pk}
    if command["cmd"] == "approve":
        from django.contrib.auth import get_user_model

        from kernelhub.optimization.models import Candidate
        from kernelhub.review.services import kernel_approve, kernel_propose

        candidate = Candidate.objects.get(pk=command["candidate"])
        team = candidate.session.team.name
        users = get_user_model().objects
        review = kernel_propose(candidate=candidate, user=users.get(username=f"{team}-engineer"))
        kernel_approve(review=review, reviewer=users.get(username=f"{team}-reviewer"),
                       comment="approved by the test")
        return {"kernel": review.pk}
    if command["cmd"] == "create_problem":  # a library problem whose coverage was never asked
        import hashlib

        source = (REPO / "tests" / "tiny_problem.py").read_text()
        from django.utils import timezone

        problem = Problem.objects.create(
            name=command["name"], family="elementwise", source=source,
            source_sha256=hashlib.sha256(source.encode()).hexdigest(),
            # "asked": as if a check were already on its way (no page asks for it again)
            offline_coverage_requested_at=timezone.now() if command.get("asked") else None)
        return {"problem": problem.pk}
    if command["cmd"] == "create_document":
        from knowledge.models import Document

        fields = {k: v for k, v in command.items() if k not in ("cmd", "team")}
        document = Document.objects.create(
            team=Team.objects.get(name=command.get("team", "alpha")),
            **({"kind": "markdown", "size_bytes": 1, "stored_path": "none",
                "category": "hardware-specific", "hardware": [], "status": "ready",
                "filename": f"{fields.get('title', 'doc')}.md",
                "content_hash": fields.get("title", "doc")} | fields))
        return {"document": document.pk}
    if command["cmd"] == "publish":
        session = SearchSession.objects.get(pk=command["session"])
        seqs, published = [], []
        for event_type, payload in command["events"]:
            published.append(time.time() * 1000)
            seqs.append(publish_session_event(session, event_type, payload).seq)
            if command.get("interval_s"):
                time.sleep(command["interval_s"])
        return {"seqs": seqs, "published_ms": published}
    if command["cmd"] == "session":
        session = SearchSession.objects.get(pk=command["session"])
        return {"status": session.status, "evaluated": session.evaluated_count,
                "last_seq": session.last_seq}
    return {"error": f"unknown command {command['cmd']!r}"}


def _command_loop() -> None:
    from django.db import close_old_connections

    for line in sys.stdin:
        try:
            close_old_connections()
            answer = _handle(json.loads(line))
        except Exception as exc:  # report to the test, keep serving
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    os._exit(0)  # stdin closed: the test is gone


def serve(port: int) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kernelhub.settings")
    import django

    django.setup()
    from daphne.endpoints import build_endpoint_description_strings
    from daphne.server import Server

    _setup_data()  # collectstatic first, as `make run`: WhiteNoise without DEBUG indexes
    from kernelhub.asgi import application  # the collected files when it starts

    sys.stdout.write(json.dumps({"ready": True, "port": port}) + "\n")
    sys.stdout.flush()
    threading.Thread(target=_command_loop, daemon=True).start()
    Server(application=application, signal_handlers=True,
           endpoints=build_endpoint_description_strings(host="127.0.0.1", port=port)).run()


if __name__ == "__main__":
    serve(int(sys.argv[sys.argv.index("--port") + 1]))
