"""Writes for sessions and what a running search records. Problems and hardware targets
are written in `problem_services` (re-exported here for callers)."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from kernelhub import placement
from kernelhub.optimization.candidates import candidate_created_fields, candidate_result_fields
from kernelhub.optimization.events import publish_session_event
from kernelhub.optimization.models import (
    Budget, Candidate, HardwareTarget, Problem, Screening, SearchSession,
)
from kernelhub.optimization.problem_services import (  # noqa: F401  (re-exported)
    MAX_PROBLEM_BYTES,
    hardware_targets_sync,
    offline_coverage_of_source,
    problem_create,
    problem_offline_coverage_compute,
    problem_offline_coverage_request,
    problems_offline_coverage_request_pending,
    problems_offline_coverage_resume,
)
from kernelhub.optimization.selectors import session_best_candidate
from kernelhub.review.services import kernel_propose
from kernelhub.teams.models import Team
from kernelhub.teams.selectors import user_can
from search_engine.candidate import CandidateRecord

PRECISION_POLICIES = ("strict", "tf32", "bf16")


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
    _check_screening(config or {})
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


def _check_screening(config: dict) -> None:
    """The screening a session's config asks for is within `Screening`'s bounds."""
    for key, (low, high), what in (
            ("screen", Screening.CONFIGURATIONS, "Configurations screened per expansion"),
            ("screen_finalists", Screening.FINALISTS, "Finalists per expansion")):
        value = config.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or not low <= value <= high):
            raise ValidationError(f"{what} must be a whole number between {low} and {high}.")
    screen, finalists = config.get("screen"), config.get("screen_finalists")
    if screen and finalists and finalists > screen:
        raise ValidationError(f"Finalists per expansion ({finalists}) cannot exceed the "
                              f"configurations screened ({screen}).")


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

NOT_EVALUATED_STATUSES = ("pending", "cancelled", "pruned", "screened")  # never evaluated


def candidate_record_created(*, session: SearchSession, node: dict, parent_pk: int | None) -> int:
    """Store a new node of the search as a pending Candidate (or refresh it: a rebuilt loop
    re-announces its stored nodes); its LLM usage counts against the session. Returns the pk."""
    record = CandidateRecord.from_node(node)
    candidate, created = Candidate.objects.update_or_create(
        session=session, node_id=str(record.node_id),
        defaults=candidate_created_fields(record, parent_pk))
    session_add_llm_usage(session, record.usage)
    if created and record.origin.get("screen"):  # a re-announced node counted already
        SearchSession.objects.filter(pk=session.pk).update(
            screened_count=F("screened_count") + 1)
    return candidate.pk


def candidate_record_result(*, session: SearchSession, candidate_pk: int, node: dict,
                            advantages: dict[int, float] | None = None) -> None:
    """Store an evaluated node's result on its Candidate; the root's result is the session's
    baseline; every other evaluated (not cancelled) node counts against the budget.
    `advantages` (candidate pk -> advantage) are the siblings' updated advantages."""
    record = CandidateRecord.from_node(node)
    Candidate.objects.filter(pk=candidate_pk).update(
        **candidate_result_fields(record), evaluated_at=timezone.now())
    for pk, advantage in (advantages or {}).items():
        Candidate.objects.filter(pk=pk).update(advantage=advantage)
    if record.parent_node_id is None:
        SearchSession.objects.filter(pk=session.pk).update(baseline=record.baselines)
    elif record.status not in NOT_EVALUATED_STATUSES:
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
    (with `start`) the hand-over to the runner. `options` are `session_create`'s.

    Returns at once: a problem whose coverage is not known yet is checked by the session's
    loop before it searches (the session says so meanwhile, and fails with the reason when
    the offline synthesizer does not cover it); a known "uncovered" is refused here."""
    synthesizer = options.get("synthesizer", SearchSession.SynthesizerKind.OFFLINE)
    offline = synthesizer == SearchSession.SynthesizerKind.OFFLINE
    if offline and problem.offline_coverage_ready:
        _require_offline_coverage(problem)
    session = session_create(user=user, team=team, problem=problem, hardware=hardware,
                             **options)
    if offline and not problem.offline_coverage_ready:
        session = session_set_status(session, session.status, COVERAGE_CHECK_MESSAGE)
    return session_start(session) if start else session


COVERAGE_CHECK_MESSAGE = ("checking whether the offline synthesizer covers the problem (the "
                          "problem runs in the sandbox); the search starts right after")


def _require_offline_coverage(problem: Problem) -> None:
    coverage = problem.offline_coverage
    if coverage["state"] == "uncovered":
        raise ValidationError({"problem": offline_uncovered_message(coverage)})


def offline_uncovered_message(coverage: dict) -> str:
    return (f"The offline synthesizer does not cover this problem: {coverage['detail']}. "
            "Pick the LLM synthesizer or another problem.")


def session_check_offline_coverage(session: SearchSession) -> bool:
    """The loop's first step for an offline session: know the problem's coverage (computed
    here when no check has answered yet). An uncovered problem ends the session (failed,
    with the reason); False then."""
    if session.synthesizer != SearchSession.SynthesizerKind.OFFLINE:
        return True
    problem = session.problem
    if not problem.offline_coverage_ready:
        problem = problem_offline_coverage_compute(problem)
    coverage = problem.offline_coverage
    session.refresh_from_db(fields=["status", "status_message"])
    if not session.is_active:  # cancelled meanwhile
        return False
    if coverage["state"] == "uncovered":
        session_set_status(session, SearchSession.Status.FAILED,
                           offline_uncovered_message(coverage))
        return False
    if session.status_message == COVERAGE_CHECK_MESSAGE:
        session_set_status(session, session.status, f"problem checked: {coverage['detail']}")
    return True


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
