"""Reads for problems, sessions and candidates, always scoped to the user's teams."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Q, QuerySet
from django.http import Http404

from kernelhub.optimization.models import (
    Candidate,
    HardwareTarget,
    Problem,
    SearchSession,
    SessionEvent,
)
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
