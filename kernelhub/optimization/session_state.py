"""Why a session is (not) moving: the one read the session page, the dashboard and the REST
API share, so an API client sees what the page shows.

States (`SessionState.state`):
  queued_for_loop     its loop message waits in the `search` queue for a free loop slot
  waiting_for_worker  nothing serves what it needs: no live worker on its queue (`search`
                      or `gpu.<target>`), or, in the embedded default, this server cannot run
                      its target (no matching GPU)
  checking_problem    its loop checks whether the offline synthesizer covers the problem
                      (in the sandbox) before it searches
  paused_llm_outage   paused by itself while the LLM endpoint is down; resumes by itself
  paused              paused by a user
  running             its loop runs (starting included) and its evaluations can run
  finished / failed / cancelled   ended; `detail` is the reason
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from django.utils import timezone

from kernelhub import placement
from kernelhub.optimization.models import SearchSession, SessionLease
from kernelhub.queues import SEARCH_QUEUE, gpu_queue

STATES = ("queued_for_loop", "waiting_for_worker", "checking_problem", "paused_llm_outage", "paused", "running",
          "finished", "failed", "cancelled")
LABELS = {"queued_for_loop": "queued for a loop slot", "waiting_for_worker": "waiting for a worker",
          "checking_problem": "checking the problem",
          "paused_llm_outage": "paused: LLM endpoint down", "paused": "paused",
          "running": "running", "finished": "finished", "failed": "failed",
          "cancelled": "cancelled"}


@dataclass(frozen=True)
class SessionState:
    state: str  # one of STATES
    detail: str  # a sentence for a person: why, and what to do
    queue: str = ""  # the queue it waits on ("search", "gpu.h200"); "" when not waiting

    @property
    def label(self) -> str:
        return LABELS[self.state]

    @property
    def waiting(self) -> bool:
        """Active yet not moving for a reason outside the search itself."""
        return self.state in ("queued_for_loop", "waiting_for_worker", "checking_problem",
                              "paused_llm_outage")

    def as_dict(self) -> dict:
        return {**asdict(self), "label": self.label, "waiting": self.waiting}


def session_state(session: SearchSession) -> SessionState:
    if not session.is_active:
        return SessionState(session.status, session.status_message)
    if session.status == SearchSession.Status.PAUSED:
        if session.llm_outage:
            return SessionState("paused_llm_outage", _outage_detail(session.llm_outage))
        return SessionState("paused", session.status_message or "paused by a user")
    if placement.evaluations_run_here():
        return _embedded_state(session)
    return _distributed_state(session)


def _embedded_state(session: SearchSession) -> SessionState:
    target = session.hardware.name
    if not placement.local_target_served(target):
        served = ", ".join(placement.local_targets())
        return SessionState(
            "waiting_for_worker",
            f"waiting for a worker: this server cannot run {session.hardware.display_name} "
            f"(it runs: {served}); start a worker for {gpu_queue(target)} on a host with "
            "that GPU (distributed mode, see the README), or cancel and pick a target it runs",
            gpu_queue(target))
    return _checking_problem(session) or SessionState("running", session.status_message)


def _distributed_state(session: SearchSession) -> SessionState:
    from kernelhub.optimization.selectors import live_workers

    served = {q for worker in live_workers() for q in worker.queues.split(",") if q}
    lease = SessionLease.objects.filter(session_id=session.pk).first()
    loop_runs = lease is not None and lease.owner != "" and lease.expires_at >= timezone.now()
    if not loop_runs:
        if SEARCH_QUEUE not in served:
            return SessionState(
                "waiting_for_worker", "waiting for a worker: no live worker serves "
                f"{SEARCH_QUEUE}, which runs session loops (start one with `make worker`)",
                SEARCH_QUEUE)
        return SessionState("queued_for_loop", _queued_detail(session), SEARCH_QUEUE)
    queue = gpu_queue(session.hardware.name)
    if queue not in served:
        return SessionState(
            "waiting_for_worker", f"waiting for a worker: no live worker serves {queue} "
            f"(start one with `make worker-gpu TARGET={session.hardware.name}`)", queue)
    return _checking_problem(session) or SessionState("running", session.status_message)


def _checking_problem(session: SearchSession) -> SessionState | None:
    """An offline session whose problem's coverage is not known yet: its loop checks it
    (said after a missing worker, which is what a person must act on)."""
    if (session.synthesizer != SearchSession.SynthesizerKind.OFFLINE
            or session.problem.offline_coverage_ready):
        return None
    return SessionState(
        "checking_problem", f"checking whether the offline synthesizer covers "
        f"{session.problem.name} (the problem runs in the sandbox, usually well under a "
        "minute); the search starts right after, or the session ends saying why not")


def _queued_detail(session: SearchSession) -> str:
    now = timezone.now()
    running = SessionLease.objects.filter(expires_at__gte=now).exclude(owner="").count()
    ahead = SearchSession.objects.filter(
        status__in=SearchSession.ACTIVE_STATUSES, created_at__lt=session.created_at,
    ).exclude(lease__owner__gt="", lease__expires_at__gte=now).count()
    return (f"queued for a loop slot: {running} session loop{'s' if running != 1 else ''} "
            f"hold{'' if running != 1 else 's'} the search workers' slots and {ahead} "
            f"queued session{'s' if ahead != 1 else ''} came first; it starts when a loop "
            "ends (raise the search worker's concurrency, SEARCH_CONCURRENCY, or start "
            "another `make worker`)")


def _outage_detail(outage: dict) -> str:
    code = f" (HTTP {outage['status_code']})" if outage.get("status_code") else ""
    error = f": {outage['error']}" if outage.get("error") else ""
    retry = (f" in {float(outage['retry_in_s']):.0f} s" if outage.get("retry_in_s") else "")
    return (f"LLM endpoint unavailable{code}{error}. The session is paused and retries by "
            f"itself{retry}; Resume asks the endpoint now.")


def session_waiting_for_worker(session: SearchSession) -> str:
    """Why an active session makes no progress for lack of a worker ("" if it does not)."""
    state = session_state(session)
    return state.detail if state.state == "waiting_for_worker" else ""
