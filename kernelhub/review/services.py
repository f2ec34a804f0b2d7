"""Proposing, approving and rejecting kernels; every decision lands in the audit trail."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from kernelhub.optimization.models import Candidate
from kernelhub.review.models import AuditEvent, Review
from kernelhub.teams.models import Team
from kernelhub.teams.selectors import user_can


class KernelAlreadyApproved(ValidationError):
    """A candidate is approved at most once; the API answers 409 Conflict with this message."""

    code = "already_approved"

    def __init__(self, candidate: Candidate, approved: Review | None = None):
        where = f" (review #{approved.pk})" if approved is not None else ""
        super().__init__(
            f"Kernel {candidate.node_id} of session {candidate.session_id} is already "
            f"approved{where}; an approved kernel cannot be proposed or approved again.",
            code=self.code,
        )


def approved_review_of(candidate: Candidate) -> Review | None:
    return (Review.objects.filter(candidate=candidate, status=Review.Status.APPROVED)
            .order_by("decided_at", "pk").first())


def audit_record(
    *, team: Team, actor: AbstractBaseUser | None, action: str, target, details: dict | None = None
) -> AuditEvent:
    return AuditEvent.objects.create(
        team=team,
        actor=actor if actor is not None and actor.is_authenticated else None,
        action=action,
        target_type=type(target).__name__.lower(),
        target_id=str(target.pk),
        details=details or {},
    )


def candidate_metrics_snapshot(candidate: Candidate) -> dict:
    return {
        "status": candidate.status,
        "speedup_vs_eager": candidate.speedup_vs_eager,
        "speedup_vs_compile": candidate.speedup_vs_compile,
        "coverage": candidate.coverage,
        "reward": candidate.reward,
        "timing": candidate.timing,
        "bottleneck": (candidate.diagnostics or {}).get("bottleneck"),
        "precision_policy": candidate.session.precision_policy,
        "integrity_flags": candidate.integrity_flags,
    }


def kernel_propose(
    *, candidate: Candidate, user: AbstractBaseUser | None, automatic: bool = False
) -> Review:
    """Put a correct candidate in the review queue (sessions propose their best when they end)."""
    team = candidate.session.team
    if not automatic and not user_can(user, team, "propose"):
        raise PermissionDenied("Only engineers, reviewers and admins of the team propose kernels.")
    if candidate.status != "correct":
        raise ValidationError(
            f"Only correct kernels can be proposed; this one is {candidate.status!r}."
        )
    approved = approved_review_of(candidate)
    if approved is not None:
        if automatic:
            return approved  # a session that ends again proposes nothing new
        raise KernelAlreadyApproved(candidate, approved)
    existing = Review.objects.filter(candidate=candidate, status=Review.Status.PENDING).first()
    if existing is not None:
        return existing
    with transaction.atomic():
        review = Review.objects.create(
            team=team, candidate=candidate, hardware=candidate.session.hardware,
            proposed_by=user if not automatic else None,
            metrics=candidate_metrics_snapshot(candidate),
        )
        audit_record(team=team, actor=user, action="kernel_proposed", target=review,
                     details={"candidate": candidate.pk, "automatic": automatic})
    return review


def _decide(review: Review, reviewer: AbstractBaseUser, status: str, comment: str,
            override_reason: str = "") -> Review:
    if not user_can(reviewer, review.team, "review"):
        raise PermissionDenied("Only reviewers and admins of the team decide on kernels.")
    if review.status != Review.Status.PENDING:
        raise ValidationError(f"This review was already decided ({review.status}).")
    with transaction.atomic():
        locked = Review.objects.select_for_update().get(pk=review.pk)
        if locked.status != Review.Status.PENDING:
            raise ValidationError(f"This review was already decided ({locked.status}).")
        if status == Review.Status.APPROVED:
            # Lock the candidate's reviews: two reviewers approving at once cannot both win.
            list(Review.objects.select_for_update().filter(candidate_id=review.candidate_id))
            approved = approved_review_of(review.candidate)
            if approved is not None:
                raise KernelAlreadyApproved(review.candidate, approved)
        review.status = status
        review.reviewer = reviewer
        review.decided_at = timezone.now()
        review.comment = comment.strip()
        review.metrics = candidate_metrics_snapshot(review.candidate)
        review.integrity_override = bool(override_reason)
        review.override_reason = override_reason.strip()
        try:
            with transaction.atomic():  # a savepoint: the constraint backs the check above
                review.save()
        except IntegrityError as exc:
            raise KernelAlreadyApproved(review.candidate) from exc
        audit_record(
            team=review.team, actor=reviewer, action=f"kernel_{status}", target=review,
            details={"candidate": review.candidate_id, "comment": review.comment,
                     "hardware": review.hardware.name, "metrics": review.metrics,
                     "integrity_override": review.integrity_override,
                     "override_reason": review.override_reason},
        )
    return review


def kernel_approve(
    *, review: Review, reviewer: AbstractBaseUser, comment: str = "", override_reason: str = ""
) -> Review:
    """Approve a proposed kernel. Flags must be overridden explicitly, with a reason."""
    candidate = review.candidate
    approved = approved_review_of(candidate)
    if approved is not None and approved.pk != review.pk:
        raise KernelAlreadyApproved(candidate, approved)
    if candidate.status != "correct":
        raise ValidationError(f"Cannot approve a kernel whose status is {candidate.status!r}.")
    if candidate.integrity_flags and not override_reason.strip():
        checks = ", ".join(sorted({f.get("check", "?") for f in candidate.integrity_flags}))
        raise ValidationError(
            f"This kernel has integrity flags ({checks}); approving it needs an explicit "
            "override with a reason."
        )
    return _decide(review, reviewer, Review.Status.APPROVED, comment, override_reason)


def kernel_reject(*, review: Review, reviewer: AbstractBaseUser, comment: str) -> Review:
    if not comment.strip():
        raise ValidationError("Say why the kernel is rejected.")
    return _decide(review, reviewer, Review.Status.REJECTED, comment)
