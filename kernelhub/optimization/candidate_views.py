"""Lists of candidates, their side-by-side comparison and the download of any candidate's
source (team members only, like every page of a session)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from kernelhub.listing import list_context, render_list
from kernelhub.optimization import code_render, page_lists
from kernelhub.optimization.selectors import candidate_get_for_user, session_get_for_user
from kernelhub.review.evidence import roofline_position, timing_rows


@login_required
@require_GET
def candidate_list(request, pk: int):
    """A session's candidates as a sortable, filterable, paginated table."""
    session = session_get_for_user(request.user, pk)
    context = list_context(request, session.candidates.all(), page_lists.CANDIDATES)
    context |= {"session": session, "is_interpreter": session.hardware.is_interpreter}
    return render_list(request, "optimization/candidate_list.html",
                       "optimization/partials/candidate_list_body.html", context)


MAX_COMPARED = 6


@login_required
@require_GET
def candidate_compare(request):
    """Two or more kernels side by side: numbers, timings, roofline, and code diffs against
    the first picked."""
    try:
        pks = list(dict.fromkeys(int(v) for v in request.GET.getlist("c")))[:MAX_COMPARED]
    except ValueError:
        pks = []
    if len(pks) < 2:
        messages.error(request, "Pick two or more candidates to compare.")
        return redirect(request.META.get("HTTP_REFERER") or "optimization:session_list")
    candidates = [candidate_get_for_user(request.user, pk) for pk in pks]
    columns = [{"candidate": c, "is_interpreter": c.session.hardware.is_interpreter,
                "timing_rows": timing_rows(c.timing),
                "roofline": roofline_position((c.diagnostics or {}).get("roofline") or {})}
               for c in candidates]
    base = candidates[0]
    diffs = [{"base": base, "other": other, "diff": code_render.code_diff(
        base.source, other.source, f"candidate-{base.node_id}.py",
        f"candidate-{other.node_id}.py")} for other in candidates[1:]]
    names = list(dict.fromkeys(t["name"] for col in columns for t in col["timing_rows"]))
    return render(request, "optimization/candidate_compare.html", {
        "columns": columns, "diffs": diffs, "timing_names": names,
        "code_css": code_render.code_css()})


@login_required
@require_GET
def candidate_download(request, pk: int):
    """Any candidate's source as a .py file, for members of its team (others get a 404)."""
    candidate = candidate_get_for_user(request.user, pk)
    response = HttpResponse(candidate.source, content_type="text/x-python; charset=utf-8")
    response["Content-Disposition"] = (
        f'attachment; filename="kernelhub-session-{candidate.session_id}-'
        f'candidate-{candidate.node_id}.py"')
    return response
