"""The dashboard's read model: everything on it is scoped to the user's teams."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser

from kernelhub.optimization.models import SearchSession
from kernelhub.optimization.selectors import session_list_for_user
from kernelhub.review.selectors import approved_kernels_for_user, review_queue_for_user
from kernelhub.teams.selectors import team_list_for_user


def knowledge_size() -> dict:
    """Documents and skills in the knowledge base (0 before the app has any)."""
    try:
        from knowledge.selectors import knowledge_stats
    except ImportError:
        return {"documents": 0, "chunks": 0, "skills": 0}
    return knowledge_stats()


def dashboard_summary(user: AbstractBaseUser) -> dict:
    sessions = session_list_for_user(user)
    return {
        "teams": team_list_for_user(user),
        "running_sessions": sessions.filter(status__in=SearchSession.ACTIVE_STATUSES)[:20],
        "finished_sessions": sessions.exclude(status__in=SearchSession.ACTIVE_STATUSES)[:20],
        "approved_kernels": approved_kernels_for_user(user)[:10],
        "review_queue_count": review_queue_for_user(user).count(),
        "knowledge": knowledge_size(),
    }
