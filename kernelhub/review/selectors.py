from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet
from django.http import Http404

from kernelhub.review.models import AuditEvent, Review
from kernelhub.teams.selectors import team_ids_for_user


def review_list_for_user(user: AbstractBaseUser) -> QuerySet[Review]:
    return Review.objects.filter(team_id__in=team_ids_for_user(user)).select_related(
        "candidate", "candidate__session", "candidate__session__problem", "hardware",
        "reviewer", "proposed_by",
    )


def review_queue_for_user(user: AbstractBaseUser) -> QuerySet[Review]:
    return review_list_for_user(user).filter(status=Review.Status.PENDING)


def approved_kernels_for_user(user: AbstractBaseUser) -> QuerySet[Review]:
    return review_list_for_user(user).filter(status=Review.Status.APPROVED).order_by("-decided_at")


def review_get_for_user(user: AbstractBaseUser, pk: int) -> Review:
    try:
        return review_list_for_user(user).get(pk=pk)
    except Review.DoesNotExist:
        raise Http404("No such review in your teams.")


def audit_trail_for_user(user: AbstractBaseUser) -> QuerySet[AuditEvent]:
    return AuditEvent.objects.filter(team_id__in=team_ids_for_user(user)).select_related("actor")


def review_next_for_user(user: AbstractBaseUser, after: Review) -> Review | None:
    """The pending review that follows `after` in the queue's order (newest proposal first),
    wrapping round to the top; None when nothing else waits."""
    pending = review_queue_for_user(user).exclude(pk=after.pk).order_by("-proposed_at", "-pk")
    following = pending.filter(proposed_at__lte=after.proposed_at).exclude(
        proposed_at=after.proposed_at, pk__gt=after.pk).first()
    return following or pending.first()
