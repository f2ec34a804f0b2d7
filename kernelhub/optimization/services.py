"""Writes for hardware targets, problems and sessions."""

from __future__ import annotations

import hashlib
import logging
from datetime import timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from kernelhub import placement
from kernelhub.optimization.events import publish_session_event
from kernelhub.optimization.models import Budget, Candidate, HardwareTarget, Problem, SearchSession
from kernelhub.optimization.selectors import session_best_candidate
from kernelhub.review.services import kernel_propose
from kernelhub.teams.models import Team
from kernelhub.teams.selectors import user_can
from search_engine.hardware import TARGETS
from search_engine.problem_check import ProblemInvalid, check_problem

MAX_PROBLEM_BYTES = 200_000
PRECISION_POLICIES = ("strict", "tf32", "bf16")
# A coverage request that did not finish in this long (a lost worker, a restarted server)
# is made again by the next page that shows the problem.
COVERAGE_REQUEST_STALE_S = 300
# "unknown" (the sandbox timed out or could not start) is asked again after this long.
COVERAGE_UNKNOWN_RETRY_S = 3600

logger = logging.getLogger(__name__)


def hardware_targets_sync() -> list[HardwareTarget]:
    """Create or refresh the known targets from search_engine's table."""
    rows = []
    for target in TARGETS.values():
        row, _ = HardwareTarget.objects.update_or_create(
            name=target.name,
            defaults={
                "display_name": target.name.upper() if target.name != "interpreter"
                else "Interpreter (CPU)",
                "vendor": target.vendor,
                "architecture": target.architecture,
                "memory_bandwidth_gbs": target.memory_bandwidth_gbs,
                "fp32_tflops": target.fp32_tflops,
                "bf16_tflops": target.bf16_tflops,
                "multiprocessors": target.multiprocessors,
                "l2_bytes": target.l2_bytes,
                "shared_memory_per_block_bytes": target.shared_memory_per_block_bytes,
                "ceilings_source": target.source,
                "notes": target.notes,
            },
        )
        rows.append(row)
    return rows


def problem_create(
    *,
    name: str,
    source: str,
    team: Team | None,
    user: AbstractBaseUser | None = None,
    family: str = "",
    description: str = "",
    validate_timeout_s: float = 30.0,
    request_offline_coverage: bool = True,
) -> Problem:
    """Validate a KernelBench problem (statically, then by running it in the sandbox) and
    store it; its offline coverage is then computed in the background (once the row is
    committed) unless `request_offline_coverage` is False (then the first page showing it
    asks).

    `team=None` makes a library problem (demo data, staff only)."""
    if team is not None and user is not None and not user_can(user, team, "upload"):
        raise PermissionDenied("Only engineers and admins of the team upload problems.")
    name = (name or "").strip()
    if not name:
        raise ValidationError("Give the problem a name.")
    if len(source.encode()) > MAX_PROBLEM_BYTES:
        raise ValidationError(f"The problem file is larger than {MAX_PROBLEM_BYTES // 1000} kB.")
    if Problem.objects.filter(team=team, name=name).exists():
        raise ValidationError(f"A problem named {name!r} already exists in this team.")
    try:
        info = check_problem(source, timeout_s=validate_timeout_s)
    except ProblemInvalid as exc:
        raise ValidationError(str(exc)) from exc
    problem = Problem.objects.create(
        team=team,
        name=name,
        family=family.strip(),
        description=description,
        source=source,
        source_sha256=hashlib.sha256(source.encode()).hexdigest(),
        dtype=info.dtype,
        created_by=user,
    )
    if request_offline_coverage:
        problem_offline_coverage_request(problem)
    return problem


# --- offline coverage (computed in the sandbox, stored on the problem) ------------------------

def problem_offline_coverage_request(problem: Problem) -> bool:
    """Ask for the problem's offline coverage in the background, at most once at a time.

    Returns whether a computation was queued (False: it is ready, or already asked for)."""
    now = timezone.now()
    if _coverage_current(problem, now):
        return False
    claimed = Problem.objects.filter(pk=problem.pk).filter(
        Q(offline_coverage_requested_at__isnull=True)
        | Q(offline_coverage_requested_at__lt=now - timedelta(seconds=COVERAGE_REQUEST_STALE_S))
    ).update(offline_coverage_requested_at=now)
    if not claimed:
        return False
    problem.offline_coverage_requested_at = now
    placement.problem_coverage(problem.pk)
    return True


def problem_offline_coverage_compute(problem: Problem | int, *, force: bool = False) -> Problem:
    """Compute the offline coverage (the analysis runs in the sandbox) and store it.

    What the background task runs; also the launch of an offline session whose problem was
    never checked. Skips problems whose stored coverage is for their current source."""
    if not isinstance(problem, Problem):
        problem = Problem.objects.get(pk=problem)
    if not force and _coverage_current(problem, timezone.now()):
        return problem
    sha = problem.source_sha256
    found = offline_coverage_of_source(problem.source)
    fields = {
        "offline_coverage_state": found["state"],
        "offline_coverage_detail": found["detail"][:4000],
        "offline_coverage_family": (found.get("family") or "")[:32],
        "offline_coverage_ops": list(found.get("ops") or [])[:200],
        "offline_coverage_sha256": sha,
        "offline_coverage_computed_at": timezone.now(),
    }
    # Only for the source it was computed from (an edit in between wins).
    Problem.objects.filter(pk=problem.pk, source_sha256=sha).update(**fields)
    for name, value in fields.items():
        setattr(problem, name, value)
    return problem


def _coverage_current(problem: Problem, now) -> bool:
    if not problem.offline_coverage_ready:
        return False
    return not (problem.offline_coverage_state == Problem.Coverage.UNKNOWN
                and problem.offline_coverage_computed_at is not None
                and now - problem.offline_coverage_computed_at
                > timedelta(seconds=COVERAGE_UNKNOWN_RETRY_S))


def offline_coverage_of_source(source: str) -> dict:
    """{"state": "covered" | "uncovered" | "unknown", "detail", "family"?, "ops"?}.

    The synthesizer's analysis runs the problem in the sandbox; this process only reads its
    checked JSON answer. Never raises."""
    from search_engine.synthesis.base import NotCoveredError
    from search_engine.synthesis.offline import OfflineSynthesizer
    from search_engine.synthesis.offline.analysis import CoverageUnknown

    try:
        family = OfflineSynthesizer().check_covered(source)
    except CoverageUnknown as exc:
        return {"state": "unknown", "detail": str(exc)}
    except NotCoveredError as exc:
        return {"state": "uncovered", "detail": str(exc), "ops": exc.ops}
    except Exception as exc:  # a bug in the analysis: say so, never fail the caller
        logger.warning("offline coverage check failed: %s", exc)
        return {"state": "unknown", "detail": f"coverage unknown: {type(exc).__name__}: {exc}"}
    return {"state": "covered", "detail": f"covered (template family: {family})",
            "family": family}


def session_create(
    *,
    user: AbstractBaseUser,
    team: Team,
    problem: Problem,
    hardware: HardwareTarget,
    strategy: str = SearchSession.Strategy.MCTS,
    synthesizer: str = SearchSession.SynthesizerKind.OFFLINE,
    budget_evaluations: int = Budget.DEFAULT_EVALUATIONS,
    budget_minutes: float = Budget.DEFAULT_MINUTES,
    budget_cost_usd: float = 0.0,
    precision_policy: str = "strict",
    seed: int = 0,
    config: dict | None = None,
) -> SearchSession:
    """Record a new session (queued). The runner starts it; see `session_start`."""
    if not user_can(user, team, "launch"):
        raise PermissionDenied("Only engineers and admins of the team launch sessions.")
    if problem.team_id not in (None, team.pk):
        raise PermissionDenied("That problem belongs to another team.")
    if strategy not in SearchSession.Strategy.values:
        raise ValidationError(f"Unknown strategy {strategy!r}.")
    if synthesizer not in SearchSession.SynthesizerKind.values:
        raise ValidationError(f"Unknown synthesizer {synthesizer!r}.")
    if precision_policy not in PRECISION_POLICIES:
        raise ValidationError(f"Unknown precision policy {precision_policy!r}.")
    low, high = Budget.EVALUATIONS
    if not low <= budget_evaluations <= high:
        raise ValidationError(f"The evaluation budget must be between {low} and {high:,}.")
    low, high = Budget.MINUTES
    if not low <= budget_minutes <= high:
        raise ValidationError(f"The time budget must be between {low:g} and {high:,g} minutes.")
    low, high = Budget.COST_USD
    if not low <= budget_cost_usd <= high:
        raise ValidationError(f"The LLM cost budget must be between {low:g} and {high:g} USD.")
    with transaction.atomic():
        session = SearchSession.objects.create(
            team=team, problem=problem, hardware=hardware, strategy=strategy,
            synthesizer=synthesizer, budget_evaluations=budget_evaluations,
            budget_minutes=budget_minutes, budget_cost_usd=budget_cost_usd,
            precision_policy=precision_policy, seed=seed, config=config or {},
            created_by=user,
        )
        publish_session_event(session, "status_changed", {"status": session.status})
    return session


def session_set_status(session: SearchSession, status: str, message: str = "") -> SearchSession:
    """Move a session to `status` and publish it; timestamps follow the status."""
    now = timezone.now()
    session.status = status
    session.status_message = message
    fields = ["status", "status_message"]
    if status == SearchSession.Status.RUNNING and session.started_at is None:
        session.started_at = now
        fields.append("started_at")
    if status in (SearchSession.Status.FINISHED, SearchSession.Status.CANCELLED,
                  SearchSession.Status.FAILED):
        session.finished_at = now
        fields.append("finished_at")
    with transaction.atomic():
        session.save(update_fields=fields)
        publish_session_event(session, "status_changed", {"status": status, "message": message})
    return session


def session_add_llm_usage(session: SearchSession, usage: dict) -> None:
    """Count one expansion's LLM tokens and cost on the session (rejected attempts too)."""
    if not usage:
        return
    SearchSession.objects.filter(pk=session.pk).update(
        llm_cost_usd=F("llm_cost_usd") + float(usage.get("cost_usd") or 0.0),
        llm_prompt_tokens=F("llm_prompt_tokens") + int(usage.get("prompt_tokens") or 0),
        llm_completion_tokens=F("llm_completion_tokens")
        + int(usage.get("completion_tokens") or 0),
        llm_requests=F("llm_requests") + int(usage.get("requests") or 0))


def session_llm_outage(session: SearchSession, outage: dict | None, reason: str) -> SearchSession:
    """The loop paused for an LLM endpoint outage (`outage`: status code, error, next retry)
    or resumed after one (`outage=None`); the reason and HTTP status show on the page."""
    session.refresh_from_db(fields=["status"])
    if not session.is_active:
        return session
    session.llm_outage = dict(outage or {})
    SearchSession.objects.filter(pk=session.pk).update(llm_outage=session.llm_outage)
    status = SearchSession.Status.PAUSED if outage else SearchSession.Status.RUNNING
    if outage is None and session.status == SearchSession.Status.RUNNING:
        return session  # a user resumed it already
    return session_set_status(session, status, reason)


def _require_launch_permission(session: SearchSession, user: AbstractBaseUser) -> None:
    if not user_can(user, session.team, "launch"):
        raise PermissionDenied("Only engineers and admins of the team control sessions.")


# --- what a running search records (the runner's recorder calls these) -----------------------

NOT_EVALUATED_STATUSES = ("pending", "cancelled")  # a cancelled node was never evaluated


def candidate_record_created(*, session: SearchSession, node: dict, parent_pk: int | None) -> int:
    """Store a new node of the search as a pending Candidate (or refresh it: a rebuilt loop
    re-announces its stored nodes); its LLM usage counts against the session. Returns the pk."""
    origin = node.get("origin") or {}
    usage = origin.get("usage") or {}
    candidate, _ = Candidate.objects.update_or_create(
        session=session, node_id=str(node["id"]),
        defaults={
            "parent_id": parent_pk, "depth": node.get("depth", 0),
            "source": node.get("source", ""), "origin": origin,
            "status": node.get("status", "pending"),
            "retrieved_context": origin.get("context") or [],
            "prompt_tokens": int(usage.get("prompt_tokens") or 0),
            "completion_tokens": int(usage.get("completion_tokens") or 0),
            "cost_usd": float(usage.get("cost_usd") or 0.0),
            "llm_model": str(origin.get("model") or "")[:200],
        },
    )
    session_add_llm_usage(session, usage)
    return candidate.pk


def candidate_record_result(*, session: SearchSession, candidate_pk: int, node: dict,
                            advantages: dict[int, float] | None = None) -> None:
    """Store an evaluated node's result on its Candidate; the root's result is the session's
    baseline; every other evaluated (not cancelled) node counts against the budget.
    `advantages` (candidate pk -> advantage) are the siblings' updated advantages."""
    result = node.get("result") or {}
    Candidate.objects.filter(pk=candidate_pk).update(
        status=node.get("status", ""), message=(result.get("message") or "")[:4000],
        reward=node.get("reward"), advantage=node.get("advantage"),
        speedup_vs_eager=node.get("speedup_vs_eager"),
        speedup_vs_compile=node.get("speedup_vs_compile"), coverage=node.get("coverage"),
        timing=result.get("timing") or {}, diagnostics=result.get("diagnostics") or {},
        integrity_flags=result.get("integrity_flags") or [], result=result,
        evaluated_at=timezone.now(),
    )
    for pk, advantage in (advantages or {}).items():
        Candidate.objects.filter(pk=pk).update(advantage=advantage)
    if node.get("parent_id") is None:
        SearchSession.objects.filter(pk=session.pk).update(baseline=node.get("baselines") or {})
    elif node.get("status") not in NOT_EVALUATED_STATUSES:
        SearchSession.objects.filter(pk=session.pk).update(
            evaluated_count=F("evaluated_count") + 1)


def session_record_best(*, session: SearchSession, candidate_pk: int | None, best: dict) -> None:
    SearchSession.objects.filter(pk=session.pk).update(
        best_candidate_id=candidate_pk, best_speedup_vs_eager=best.get("speedup_vs_eager"),
        best_speedup_vs_compile=best.get("speedup_vs_compile"))


def session_launch(*, user: AbstractBaseUser, team: Team, problem: Problem,
                   hardware: HardwareTarget, start: bool = True, **options) -> SearchSession:
    """What every entry point (the browser's form, the REST API) does to launch a session:
    the launch rules, the offline synthesizer's coverage gate, the stored session, and
    (with `start`) the hand-over to the runner. `options` are `session_create`'s."""
    synthesizer = options.get("synthesizer", SearchSession.SynthesizerKind.OFFLINE)
    if synthesizer == SearchSession.SynthesizerKind.OFFLINE:
        if not problem.offline_coverage_ready:  # launching needs the answer (sandboxed)
            problem = problem_offline_coverage_compute(problem)
        coverage = problem.offline_coverage
        if coverage["state"] == "uncovered":
            raise ValidationError({"problem": "The offline synthesizer does not cover this "
                                              f"problem: {coverage['detail']}. Pick the LLM "
                                              "synthesizer or another problem."})
    session = session_create(user=user, team=team, problem=problem, hardware=hardware,
                             **options)
    return session_start(session) if start else session


def session_start(session: SearchSession) -> SearchSession:
    """Hand a queued session to the runner: a thread here, or the `search` Celery queue."""
    placement.session_launch(session.pk)
    return session


def session_pause(session: SearchSession, user: AbstractBaseUser) -> SearchSession:
    """Pause after the evaluations in flight; the runner polls the stored status."""
    _require_launch_permission(session, user)
    if session.status not in (SearchSession.Status.RUNNING, SearchSession.Status.QUEUED):
        raise ValidationError(f"Only a running session can be paused; this one is {session.status}.")
    return session_set_status(session, SearchSession.Status.PAUSED, f"paused by {user}")


def session_resume(session: SearchSession, user: AbstractBaseUser) -> SearchSession:
    """Resume a paused session; if its loop is gone (restart, lost worker), rebuild it
    from the stored nodes."""
    _require_launch_permission(session, user)
    if session.status != SearchSession.Status.PAUSED:
        raise ValidationError(f"Only a paused session can be resumed; this one is {session.status}.")
    if session.llm_outage:  # paused for an outage: resuming asks the endpoint again now
        SearchSession.objects.filter(pk=session.pk).update(llm_outage={})
        session.llm_outage = {}
    session = session_set_status(session, SearchSession.Status.RUNNING, f"resumed by {user}")
    if not placement.session_loop_alive(session.pk):
        placement.session_launch(session.pk)
    return session


def session_cancel(session: SearchSession, user: AbstractBaseUser) -> SearchSession:
    """Cancel: its queued evaluations are revoked at once; a live loop ends itself (and
    proposes its best kernel), a lost loop's session is closed here."""
    _require_launch_permission(session, user)
    if not session.is_active:
        raise ValidationError(f"This session already ended ({session.status}).")
    session = session_set_status(session, SearchSession.Status.CANCELLED, f"cancelled by {user}")
    placement.session_cancel_work(session.pk)
    if not placement.session_loop_alive(session.pk):
        session_close_without_loop(session)
    return session


def session_close_without_loop(session: SearchSession) -> None:
    """An ended session whose loop is gone: its pending nodes were never evaluated, and its
    best correct kernel is still proposed for review."""
    pending = session.candidates.filter(status="pending")
    for candidate in pending:
        publish_session_event(session, "node_evaluated", {
            "candidate_pk": candidate.pk, "node_id": candidate.node_id, "status": "cancelled"})
    pending.update(status="cancelled", message="cancelled before it was evaluated")
    session_propose_best(session)


def session_propose_best(session: SearchSession) -> None:
    """Propose the session's best correct, untainted kernel for review (once)."""
    best = session_best_candidate(session)
    if best is not None:
        kernel_propose(candidate=best, user=None, automatic=True)
