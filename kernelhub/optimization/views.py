"""Pages of sessions and candidates. Thin: reads through selectors, writes through services."""

from __future__ import annotations

import logging

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from kernelhub.listing import list_context, render_list
from kernelhub.optimization import code_render, page_lists, services
from kernelhub.optimization.candidates import candidate_details
from kernelhub.optimization.forms import SessionForm
from kernelhub.optimization.models import Problem, SearchSession
from kernelhub import charts
from kernelhub.optimization.selectors import (
    candidate_get_for_user,
    candidate_roofline_points,
    problem_family,
    problem_get_for_user,
    problem_kernel_plan,
    problem_list_for_user,
    problem_list_with_stats_for_user,
    problem_sessions_for_user,
    session_best_series,
    session_get_for_user,
    session_list_for_user,
)
from kernelhub.optimization.session_state import session_state
from kernelhub.teams.selectors import teams_where_user_can, user_can

logger = logging.getLogger(__name__)
CONTROL_ACTIONS = {
    "pause": services.session_pause,
    "resume": services.session_resume,
    "cancel": services.session_cancel,
}


# --- offline coverage -------------------------------------------------------------------------

def offline_coverage(problem: Problem) -> dict:
    """The stored offline coverage of `problem`; never computed here.

    {"state": "pending" | "covered" | "uncovered" | "unknown", "detail", "family", "ops"}.
    A pending problem is handed to the background task (once); the partial polls."""
    coverage = problem.offline_coverage
    if coverage["state"] == Problem.Coverage.PENDING:
        services.problem_offline_coverage_request(problem)
    return coverage


# --- problems ---------------------------------------------------------------------------------

@login_required
@require_GET
def problem_list(request):
    # Every problem the user may use, not only this page's: checks never asked for, or gone
    # stale, start now, so a problem nobody opened has its answer when someone picks it.
    services.problems_offline_coverage_request_pending(problem_list_for_user(request.user))
    context = list_context(request, problem_list_with_stats_for_user(request.user),
                           page_lists.PROBLEMS)
    for problem in context["page_obj"].object_list:
        problem.family_label = problem_family(problem)
    context["can_launch"] = bool(teams_where_user_can(request.user, "launch"))
    return render_list(request, "optimization/problem_list.html",
                       "optimization/partials/problem_list_body.html", context)


@login_required
@require_GET
def problem_detail(request, pk: int):
    problem = problem_get_for_user(request.user, pk)
    sessions = list(problem_sessions_for_user(request.user, problem)[:100])
    gpu_sessions = [s for s in sessions if not s.hardware.is_interpreter]
    figure = charts.problem_sessions_figure([(s, session_best_series(s)) for s in gpu_sessions])
    return render(request, "optimization/problem_detail.html", {
        "problem": problem, "family": problem_family(problem), "sessions": sessions,
        "coverage": offline_coverage(problem), "kernel_plan": problem_kernel_plan(problem),
        "chart": charts.figure_json(figure), "interpreter_only": bool(sessions) and not gpu_sessions,
        "can_launch": bool(teams_where_user_can(request.user, "launch")),
    })


# --- sessions ---------------------------------------------------------------------------------

@login_required
@require_GET
def session_list(request):
    context = list_context(request, session_list_for_user(request.user), page_lists.SESSIONS)
    context["can_launch"] = bool(teams_where_user_can(request.user, "launch"))
    return render_list(request, "optimization/session_list.html",
                       "optimization/partials/session_list_body.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def session_new(request):
    if request.method == "POST":
        form = SessionForm(request.POST, request.FILES, user=request.user)
        if form.is_valid():
            session = _create_session_from_form(request, form)
            if session is not None:
                return redirect("optimization:session_detail", pk=session.pk)
        status = 400
    else:
        form = SessionForm(user=request.user, initial={"problem": request.GET.get("problem")})
        status = 200
        # the problems the form offers are checked while the user fills it in
        services.problems_offline_coverage_request_pending(problem_list_for_user(request.user))
    if not form.fields["team"].queryset.exists():
        raise PermissionDenied("Only engineers and admins of a team launch sessions.")
    return render(request, "optimization/session_new.html", {"form": form}, status=status)


def _create_session_from_form(request, form: SessionForm) -> SearchSession | None:
    """Store the uploaded problem (if any), the session, and start it; form errors otherwise."""
    data = form.cleaned_data
    team, problem = data["team"], data.get("problem")
    offline = data["synthesizer"] == SearchSession.SynthesizerKind.OFFLINE
    if data.get("problem_file"):
        upload = data["problem_file"]
        try:
            problem = services.problem_create(
                name=(data.get("problem_name") or upload["name"]).strip(),
                source=upload["source"], team=team, user=request.user,
                request_offline_coverage=not offline)  # offline: the session's loop checks it
        except ValidationError as exc:
            form.add_error("problem_file", " ".join(exc.messages))
            return None
        messages.success(request, f"Problem {problem.name!r} validated and stored.")
    try:
        session = services.session_launch(
            user=request.user, team=team, problem=problem, hardware=data["hardware"],
            start=False, strategy=data["strategy"], synthesizer=data["synthesizer"],
            budget_evaluations=data["budget_evaluations"], budget_minutes=data["budget_minutes"],
            budget_cost_usd=data["budget_cost_usd"], precision_policy=data["precision_policy"],
            seed=data["seed"], config=form.session_config() or None)
    except ValidationError as exc:  # a field's rule lands on that field, others on the form
        form.add_error(None, exc)
        return None
    _start(request, session)
    return session


def _start(request, session: SearchSession) -> None:
    try:
        services.session_start(session)
    except Exception as exc:  # keep the stored session; tell the user why it did not start
        logger.exception("could not start session %s", session.pk)
        services.session_set_status(session, SearchSession.Status.FAILED,
                                    f"could not start: {type(exc).__name__}: {exc}")
        messages.error(request, f"The session could not start: {exc}")


@login_required
@require_GET
def problem_coverage(request):
    """htmx partial: does the offline synthesizer cover the picked problem?"""
    try:
        problem = problem_get_for_user(request.user, int(request.GET.get("problem") or 0))
    except (ValueError, Http404):
        return render(request, "optimization/partials/coverage.html", {"coverage": None})
    return render(request, "optimization/partials/coverage.html",
                  {"coverage": offline_coverage(problem), "problem": problem})


@login_required
@require_GET
def session_detail(request, pk: int):
    session = session_get_for_user(request.user, pk)
    hw = session.hardware
    page_config = {
        "session_id": session.pk,
        "ws_path": f"/ws/sessions/{session.pk}/",
        "candidate_url": reverse("optimization:candidate_detail", args=[0]),
        "diagnostics_url": reverse("optimization:candidate_diagnostics", args=[0]),
        "controls_url": reverse("optimization:session_controls", args=[session.pk]),
        "budget_evaluations": session.budget_evaluations,
        "budget_minutes": session.budget_minutes,
        "status": session.status,
        "created_at": session.created_at.isoformat(),
        "hardware": {"name": hw.name, "display_name": hw.display_name,
                     "memory_bandwidth_gbs": hw.memory_bandwidth_gbs,
                     "fp32_tflops": hw.fp32_tflops, "bf16_tflops": hw.bf16_tflops,
                     "is_interpreter": hw.is_interpreter},
    }
    return render(request, "optimization/session_detail.html", {
        "session": session, "page_config": page_config,
        "session_state": session_state(session),
        **_controls_context(request.user, session),
    })


def _controls_context(user, session: SearchSession) -> dict:
    can_control = user_can(user, session.team, "launch")
    return {
        "session": session,
        "can_control": can_control,
        "can_pause": can_control and session.status in (SearchSession.Status.RUNNING,
                                                        SearchSession.Status.QUEUED),
        "can_resume": can_control and session.status == SearchSession.Status.PAUSED,
        "can_cancel": can_control and session.is_active,
    }


@login_required
@require_GET
def session_controls(request, pk: int):
    session = session_get_for_user(request.user, pk)
    return render(request, "optimization/partials/controls.html",
                  _controls_context(request.user, session))


@login_required
@require_POST
def session_control(request, pk: int, action: str):
    session = session_get_for_user(request.user, pk)
    if not user_can(request.user, session.team, "launch"):
        raise PermissionDenied("Only engineers and admins of the team control sessions.")
    service = CONTROL_ACTIONS.get(action)
    if service is None:
        raise Http404("No such action.")
    error = None
    try:
        session = service(session, request.user)
    except ValidationError as exc:
        error = " ".join(exc.messages)
    if request.htmx:
        session.refresh_from_db()
        context = _controls_context(request.user, session) | {"error": error}
        return render(request, "optimization/partials/controls.html", context)
    if error:
        messages.error(request, error)
    else:
        done = {"pause": "paused", "resume": "resumed", "cancel": "cancelled"}[action]
        messages.success(request, f"Session {done}.")
    return redirect("optimization:session_detail", pk=session.pk)


@login_required
@require_GET
def session_events(request, pk: int):
    """The stored events after `?after=` (a fallback for clients without websockets)."""
    from kernelhub.optimization.events import event_to_message
    from kernelhub.optimization.selectors import session_events_after

    session = session_get_for_user(request.user, pk)
    try:
        after = max(int(request.GET.get("after", 0)), 0)
    except ValueError:
        after = 0
    events = [event_to_message(e) for e in session_events_after(session, after)[:2000]]
    return JsonResponse({"events": events, "last_seq": session.last_seq})


# --- candidates -------------------------------------------------------------------------------

@login_required
@require_GET
def candidate_detail(request, pk: int):
    candidate = candidate_get_for_user(request.user, pk)
    session = candidate.session
    parent = candidate.parent
    diff = code_render.code_diff(parent.source if parent else "", candidate.source,
                                 f"{parent.node_id if parent else 'empty'}.py",
                                 f"{candidate.node_id}.py")
    details = candidate_details(candidate)  # what of the result has no column
    return render(request, "optimization/candidate_detail.html", {
        "candidate": candidate, "session": session, "parent": parent,
        "source_html": code_render.source_html(candidate.source),
        "diff_html": diff["html"], "diff_stats": diff["stats"], "code_css": code_render.code_css(),
        "timing_rows": _timing_rows(candidate.timing or {}),
        "trials": details.get("correctness") or [],
        "kernels": (candidate.diagnostics or {}).get("kernels") or [],
        "bottleneck": (candidate.diagnostics or {}).get("bottleneck") or {},
        "roofline": (candidate.diagnostics or {}).get("roofline") or {},
        "logs": details.get("logs") or "",
        "speedup_label": _speedup_label(candidate, details),
        "is_interpreter": session.hardware.is_interpreter,
        "params_text": _params_text((candidate.origin or {}).get("params")),
        "roofline_chart": charts.figure_json(
            charts.roofline_figure(candidate_roofline_points(candidate))),
        "can_propose": candidate.status == "correct"
        and user_can(request.user, session.team, "propose"),
        "pending_review": candidate.reviews.filter(status="pending").first(),
        # An approved kernel is never offered "Propose for review" again.
        "approved_review": candidate.reviews.filter(status="approved").first(),
        "children": candidate.children.order_by("id"),
        # What the offline synthesizer plans for the problem (its kernels at the defaults).
        "kernel_plan": problem_kernel_plan(session.problem)
        if session.synthesizer == SearchSession.SynthesizerKind.OFFLINE else None,
    })


def _speedup_label(candidate, details: dict) -> str:
    """What the timings mean, in words a reader can check against the numbers shown."""
    label = details.get("speedup_label") or ""
    if candidate.session.hardware.is_interpreter or label.startswith("interpreter"):
        return ("Interpreter target: correctness check only — timings are CPU wall-clock of the "
                "Triton interpreter and are not comparable with eager PyTorch, so no speedup "
                "is reported; the reward counts this candidate as exactly as fast as eager.")
    return label


def _params_text(params) -> str:
    if not params:
        return ""
    if isinstance(params, dict):
        return ", ".join(f"{key}={value}" for key, value in params.items())
    return str(params)


def _timing_rows(timing: dict) -> list[dict]:
    order = {"candidate": 0, "eager": 1, "compile": 2}
    return [dict(name=name, **(stats or {}))
            for name, stats in sorted(timing.items(), key=lambda kv: order.get(kv[0], 9))]


@login_required
@require_GET
def candidate_diagnostics(request, pk: int):
    """What the live page's diagnostics panel shows for one node."""
    candidate = candidate_get_for_user(request.user, pk)
    diagnostics = candidate.diagnostics or {}
    timing = candidate.timing or {}
    return JsonResponse({
        "candidate_pk": candidate.pk, "node_id": candidate.node_id, "status": candidate.status,
        "message": candidate.message, "depth": candidate.depth,
        "url": reverse("optimization:candidate_detail", args=[candidate.pk]),
        "speedup_vs_eager": candidate.speedup_vs_eager,
        "speedup_vs_compile": candidate.speedup_vs_compile,
        "reward": candidate.reward, "advantage": candidate.advantage,
        "coverage": candidate.coverage,
        "bottleneck": diagnostics.get("bottleneck") or {},
        "roofline": diagnostics.get("roofline") or {},
        "kernels": diagnostics.get("kernels") or [],
        "candidate_ms": (timing.get("candidate") or {}).get("median_ms"),
        # what eager / torch.compile ran in; None on results stored before it was recorded
        "baseline_precision": (timing.get("eager") or {}).get("precision") or None,
        "transformation": (candidate.origin or {}).get("transformation", ""),
        "integrity_flags": candidate.integrity_flags or [],
    })


@login_required
@require_POST
def candidate_propose(request, pk: int):
    from kernelhub.review.services import kernel_propose

    candidate = candidate_get_for_user(request.user, pk)
    try:
        kernel_propose(candidate=candidate, user=request.user)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, f"{candidate.node_id} is in the review queue.")
    return redirect("optimization:candidate_detail", pk=candidate.pk)

