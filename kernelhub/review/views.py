"""The review queue, decisions, approved kernels and the audit trail (team-scoped)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from kernelhub.listing import list_context, render_list
from kernelhub.optimization import code_render
from kernelhub.review.evidence import candidate_evidence
from kernelhub.review.page_lists import APPROVED_KERNELS
from kernelhub.review.forms import DecisionForm
from kernelhub.review.selectors import (
    approved_kernels_for_user,
    audit_trail_for_user,
    review_get_for_user,
    review_next_for_user,
    review_queue_for_user,
)
from kernelhub.review.services import kernel_approve, kernel_reject
from kernelhub.teams.selectors import teams_where_user_can, user_can


def _queue_context(user, errors: dict | None = None, forms: dict | None = None) -> dict:
    reviewable = {t.pk for t in teams_where_user_can(user, "review")}
    items = []
    for review in review_queue_for_user(user):
        items.append({
            "review": review,
            "can_review": review.team_id in reviewable,
            "form": (forms or {}).get(review.pk) or DecisionForm(prefix=f"r{review.pk}"),
            "error": (errors or {}).get(review.pk),
        })
    return {"items": items}


@login_required
@require_GET
def queue(request):
    return render(request, "review/queue.html", _queue_context(request.user))


@login_required
@require_GET
def detail(request, pk: int):
    """One review with the kernel's code, diffs, trials, timings and findings in view."""
    review = review_get_for_user(request.user, pk)
    return render(request, "review/detail.html", _detail_context(request.user, review))


def _detail_context(user, review, form=None, error=None) -> dict:
    queue = list(review_queue_for_user(user).order_by("-proposed_at", "-pk")
                 .values_list("pk", flat=True))
    return {
        "review": review, "evidence": candidate_evidence(review.candidate),
        "code_css": code_render.code_css(),
        "can_review": user_can(user, review.team, "review"),
        "form": form or DecisionForm(prefix=f"r{review.pk}"), "error": error,
        "queue_position": queue.index(review.pk) + 1 if review.pk in queue else None,
        "queue_length": len(queue),
    }


@login_required
@require_POST
def decide(request, pk: int):
    review = review_get_for_user(request.user, pk)
    if not user_can(request.user, review.team, "review"):
        raise PermissionDenied("Only reviewers and admins of the team decide on kernels.")
    form = DecisionForm(request.POST, prefix=f"r{review.pk}")
    error = None
    if form.is_valid():
        data = form.cleaned_data
        try:
            if data["decision"] == "approve":
                kernel_approve(review=review, reviewer=request.user, comment=data["comment"],
                               override_reason=data["override_reason"])
            else:
                kernel_reject(review=review, reviewer=request.user, comment=data["comment"])
        except ValidationError as exc:
            error = " ".join(exc.messages)
        else:
            verb = "approved" if data["decision"] == "approve" else "rejected"
            candidate = review.candidate
            messages.success(request, f"{candidate.session.problem.name} · candidate "
                             f"{candidate.node_id} of session {candidate.session_id} {verb}.")
            # The reviewer goes on with the queue: the next item; with none left, the
            # approved kernels after an approval, the (empty) queue after a rejection.
            following = review_next_for_user(request.user, review)
            if following is not None:
                return redirect("review:detail", pk=following.pk)
            return redirect("review:approved" if verb == "approved" else "review:queue")
    else:
        error = "; ".join(e for errs in form.errors.values() for e in errs)
    if request.POST.get("from") == "detail":
        return render(request, "review/detail.html",
                      _detail_context(request.user, review, form, error), status=400)
    context = _queue_context(request.user, errors={review.pk: error}, forms={review.pk: form})
    if not any(item["review"].pk == review.pk for item in context["items"]):
        context["error"] = f"Review of {review.candidate.node_id}: {error}"
    return render(request, "review/queue.html", context, status=400)


@login_required
@require_GET
def approved(request):
    """The approved kernels as a sortable, filterable, paginated table with their downloads."""
    context = list_context(request, approved_kernels_for_user(request.user), APPROVED_KERNELS)
    return render_list(request, "review/approved.html", "review/partials/approved_list_body.html",
                       context)


@login_required
@require_GET
def audit(request):
    return render(request, "review/audit.html",
                  {"events": audit_trail_for_user(request.user).select_related("team")[:500]})
