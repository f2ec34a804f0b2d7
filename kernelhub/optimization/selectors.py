"""Reads for problems, sessions and candidates, always scoped to the user's teams."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Q, QuerySet
from django.http import Http404
from django.utils import timezone

from kernelhub import placement
from kernelhub.optimization.models import (
    Candidate,
    HardwareTarget,
    Problem,
    SearchSession,
    SessionEvent,
    WorkerPresence,
)
from kernelhub.queues import gpu_queue, is_gpu_queue, target_of
from kernelhub.teams.selectors import team_ids_for_user


def hardware_target_list() -> QuerySet[HardwareTarget]:
    return HardwareTarget.objects.all()


def problem_list_for_user(user: AbstractBaseUser) -> QuerySet[Problem]:
    """Library problems (no team) and the problems of the user's teams."""
    return Problem.objects.filter(Q(team__isnull=True) | Q(team_id__in=team_ids_for_user(user)))


def problem_get_for_user(user: AbstractBaseUser, pk: int) -> Problem:
    try:
        return problem_list_for_user(user).get(pk=pk)
    except Problem.DoesNotExist:
        raise Http404("No such problem in your teams.")


def session_list_for_user(user: AbstractBaseUser) -> QuerySet[SearchSession]:
    return SearchSession.objects.filter(team_id__in=team_ids_for_user(user)).select_related(
        "problem", "hardware", "team", "best_candidate"
    )


def session_get_for_user(user: AbstractBaseUser, pk: int) -> SearchSession:
    try:
        return session_list_for_user(user).get(pk=pk)
    except SearchSession.DoesNotExist:
        raise Http404("No such session in your teams.")


def candidate_list_for_user(user: AbstractBaseUser) -> QuerySet[Candidate]:
    return Candidate.objects.filter(session__team_id__in=team_ids_for_user(user)).select_related(
        "session", "parent"
    )


def candidate_get_for_user(user: AbstractBaseUser, pk: int) -> Candidate:
    try:
        return candidate_list_for_user(user).get(pk=pk)
    except Candidate.DoesNotExist:
        raise Http404("No such candidate in your teams.")


def session_events_after(session: SearchSession, after_seq: int = 0) -> QuerySet[SessionEvent]:
    return session.events.filter(seq__gt=after_seq).order_by("seq")


def session_best_candidate(session: SearchSession) -> Candidate | None:
    """The best correct candidate with no integrity flag that taints it."""
    for candidate in session.candidates.filter(status="correct").order_by("-reward", "id"):
        if not candidate.is_tainted:
            return candidate
    return None


# --- what the pages chart ------------------------------------------------------------------------

OUTCOMES = {"correct": "correct", "incorrect": "incorrect", "hack_suspected": "hack",
            "rejected_lazy": "lazy"}
NOT_EVALUATED = ("reference", "pending", "evaluating")
CANCELLED = "cancelled"  # a node the search cancelled: never evaluated
INFRASTRUCTURE_KEY = "infrastructure_failure"  # in diagnostics of a job no worker could run


def problem_family(problem: Problem) -> str:
    """The problem's family: the one it was stored with, else the one the offline coverage
    analysis found (what the session pages show); "" when neither is known."""
    return problem.family or problem.offline_coverage_family or ""


def problem_kernel_plan(problem: Problem) -> dict | None:
    """The kernel plan the coverage check stored (its kernels, or what is refused and why),
    or None while the coverage of the problem's current source is not known."""
    if not problem.offline_coverage_ready or not problem.offline_coverage_plan:
        return None
    return problem.offline_coverage_plan


def problem_list_with_stats_for_user(user: AbstractBaseUser) -> QuerySet[Problem]:
    """Problems the user may use, with their sessions (in the user's teams) counted and the
    best speedups over them."""
    from django.db.models import Count, Max

    team_ids = team_ids_for_user(user)
    in_teams = Q(sessions__team_id__in=team_ids)
    return problem_list_for_user(user).annotate(
        session_count=Count("sessions", filter=in_teams, distinct=True),
        best_vs_eager=Max("sessions__best_speedup_vs_eager", filter=in_teams),
        best_vs_compile=Max("sessions__best_speedup_vs_compile", filter=in_teams),
    ).select_related("team")


def approved_speedups_for_user(user: AbstractBaseUser) -> list[dict]:
    """One row per approved kernel in the user's teams: hardware, family, precision policy
    and the speedups it was approved with."""
    from kernelhub.review.models import Review

    reviews = (Review.objects.filter(team_id__in=team_ids_for_user(user),
                                     status=Review.Status.APPROVED)
               .select_related("candidate__session__problem", "hardware")
               .order_by("decided_at"))
    rows = []
    for review in reviews:
        candidate, session = review.candidate, review.candidate.session
        rows.append({
            "kernel_id": review.pk, "problem": session.problem.name,
            "family": problem_family(session.problem) or "unknown",
            "hardware": review.hardware.display_name,
            "is_interpreter": review.hardware.is_interpreter,
            "precision": session.precision_policy,
            "eager": candidate.speedup_vs_eager, "compile": candidate.speedup_vs_compile,
        })
    return rows


def evaluations_per_day_for_user(user: AbstractBaseUser, days: int = 30) -> list[dict]:
    """[{"day": date, "outcome": correct | incorrect | hack | lazy | kernel error |
    infrastructure, "count"}] of the candidates evaluated in the user's teams over the last
    `days` days."""
    import datetime as dt

    from django.db.models import Count
    from django.db.models.functions import TruncDate
    from django.utils import timezone

    from django.db.models import BooleanField, Case, Value, When

    since = timezone.now() - dt.timedelta(days=days)
    # Cancelled nodes never ran; a job the infrastructure could not run is not the kernel's
    # error: it gets its own outcome.
    infrastructure = Case(When(diagnostics__has_key=INFRASTRUCTURE_KEY, then=Value(True)),
                          default=Value(False), output_field=BooleanField())
    rows = (Candidate.objects.filter(session__team_id__in=team_ids_for_user(user),
                                     evaluated_at__gte=since)
            .exclude(status__in=(*NOT_EVALUATED, CANCELLED))
            .annotate(day=TruncDate("evaluated_at"), infrastructure=infrastructure)
            .values("day", "status", "infrastructure")
            .annotate(count=Count("pk")).order_by("day"))
    merged: dict[tuple, int] = {}
    for row in rows:
        outcome = "infrastructure" if row["infrastructure"] else \
            OUTCOMES.get(row["status"], "kernel error")
        key = (row["day"], outcome)
        merged[key] = merged.get(key, 0) + row["count"]
    return [{"day": day, "outcome": outcome, "count": count}
            for (day, outcome), count in sorted(merged.items())]


def session_bests_for_user(user: AbstractBaseUser) -> list[dict]:
    """Each session's best speedups, oldest first (GPU targets only: interpreter timings
    are not comparable)."""
    sessions = (session_list_for_user(user).exclude(hardware__name="interpreter")
                .filter(best_speedup_vs_eager__isnull=False).order_by("created_at"))
    return [{"session": s.pk, "problem": s.problem.name, "hardware": s.hardware.display_name,
             "at": s.finished_at or s.created_at, "eager": s.best_speedup_vs_eager,
             "compile": s.best_speedup_vs_compile} for s in sessions[:500]]


def session_best_series(session: SearchSession) -> list[dict]:
    """The session's best so far after each evaluation: [{"at", "eager", "compile",
    "node_id"}], from its correct, untainted candidates in evaluation order."""
    best, series = None, []
    candidates = (session.candidates.filter(status="correct", evaluated_at__isnull=False)
                  .exclude(speedup_vs_eager__isnull=True).order_by("evaluated_at", "id"))
    for candidate in candidates:
        if candidate.is_tainted:
            continue
        if best is None or candidate.speedup_vs_eager > best.speedup_vs_eager:
            best = candidate
            series.append({"at": candidate.evaluated_at, "eager": candidate.speedup_vs_eager,
                           "compile": candidate.speedup_vs_compile, "node_id": candidate.node_id})
    return series


def problem_sessions_for_user(user: AbstractBaseUser, problem: Problem) -> QuerySet[SearchSession]:
    return session_list_for_user(user).filter(problem=problem)


def candidate_roofline_points(candidate: Candidate) -> dict | None:
    """The roofline of `candidate`'s target with the candidate, its parent and the eager and
    torch.compile baselines as points; None where the target has no ceilings or the
    candidate no measured arithmetic intensity.

    The baselines run the same FLOPs over the same bytes, so they sit at the candidate's
    arithmetic intensity, at FLOP/s scaled by the time ratio."""
    hardware = candidate.session.hardware
    if hardware.is_interpreter or not hardware.memory_bandwidth_gbs:
        return None

    def point(node: Candidate | None, label: str) -> dict | None:
        if node is None:
            return None
        roof = (node.diagnostics or {}).get("roofline") or {}
        if not roof.get("arithmetic_intensity") or not roof.get("achieved_tflops"):
            return None
        return {"label": label, "ai": roof["arithmetic_intensity"],
                "tflops": roof["achieved_tflops"]}

    own = point(candidate, f"candidate {candidate.node_id}")
    if own is None:
        return None
    points = [own]
    parent = candidate.parent
    if parent is not None and parent.status != "reference":
        found = point(parent, f"parent {parent.node_id}")
        if found:
            points.append(found)
    timing = candidate.timing or {}
    mine = (timing.get("candidate") or {}).get("median_ms")
    baselines = candidate.session.baseline or {}
    for name, label in (("eager", "eager PyTorch"), ("compile", "torch.compile")):
        other = (timing.get(name) or baselines.get(name) or {}).get("median_ms")
        if mine and other:
            points.append({"label": label, "ai": own["ai"], "tflops": own["tflops"] * mine / other})
    return {"points": points, "bandwidth_gbs": hardware.memory_bandwidth_gbs,
            "fp32_tflops": hardware.fp32_tflops, "bf16_tflops": hardware.bf16_tflops,
            "hardware": hardware.display_name}


# -- distributed mode: who is there to do the work -------------------------------------------

WORKER_ALIVE_S = 15.0  # a presence heartbeat older than this: the worker is gone


def live_workers() -> QuerySet[WorkerPresence]:
    since = timezone.now() - timedelta(seconds=WORKER_ALIVE_S)
    return WorkerPresence.objects.filter(beat_at__gte=since).select_related("current_job")


def targets_with_a_worker() -> set[str]:
    """The hardware targets something can evaluate on now: this server's (embedded default)
    or those of live workers' `gpu.<target>` queues (distributed mode)."""
    if placement.evaluations_run_here():
        return set(placement.local_targets())
    return {target_of(q) for w in live_workers() for q in w.queues.split(",") if is_gpu_queue(q)}
