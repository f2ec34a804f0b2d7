"""Evaluations per day (issue 32 item 6): cancelled nodes are not counted, and a job the
infrastructure could not run is its own outcome, never a kernel's error."""

from __future__ import annotations

import pytest
from django.utils import timezone

from kernelhub.optimization.models import Candidate, SearchSession
from kernelhub.optimization.selectors import evaluations_per_day_for_user

pytestmark = pytest.mark.django_db


def test_cancelled_and_infrastructure_failures_are_not_kernel_errors(teams, hardware,
                                                                     library_problem):
    session = SearchSession.objects.create(team=teams["alpha"], problem=library_problem,
                                           hardware=hardware["h200"])
    now = timezone.now()
    kinds = [("correct", {}), ("runtime_error", {}), ("compile_error", {}),
             ("cancelled", {}), ("cancelled", {}),
             ("runtime_error", {"infrastructure_failure": "worker lost twice"})]
    for i, (status, diagnostics) in enumerate(kinds):
        Candidate.objects.create(session=session, node_id=str(i), status=status,
                                 diagnostics=diagnostics, evaluated_at=now)
    rows = evaluations_per_day_for_user(teams["users"][("alpha", "viewer")])
    counts = {row["outcome"]: row["count"] for row in rows}
    assert counts == {"correct": 1, "kernel error": 2, "infrastructure": 1}
