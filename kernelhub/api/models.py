"""Requests to the reward service and their results."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from kernelhub.optimization.models import Problem
from kernelhub.teams.models import ApiKey, Team


class Evaluation(models.Model):
    """One candidate submitted to `POST /api/v1/evaluations` and what the evaluator said.

    The API's `result` is exactly what `python -m search_engine evaluate --json` prints: an
    `EvaluationResult.to_dict()`, or `{"status": "error", "message": ...}` when the problem,
    target or policy could not be evaluated at all. Each fact is stored once: the headline
    numbers in their columns, the rest in `result`; `kernelhub.api.evaluations
    .evaluation_result` composes the whole object.
    """

    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        ERROR = "error", "Error"

    PENDING_STATES = (State.QUEUED, State.RUNNING)

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="evaluations")
    api_key = models.ForeignKey(
        ApiKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="evaluations"
    )
    submitted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )
    batch_id = models.UUIDField(null=True, blank=True, db_index=True)
    problem = models.ForeignKey(
        Problem, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    problem_name = models.CharField(max_length=200, blank=True)
    problem_source = models.TextField()
    candidate_source = models.TextField()
    target = models.CharField(max_length=32)
    precision_policy = models.CharField(max_length=8, default="strict")
    timeout_s = models.FloatField(default=180.0)
    state = models.CharField(max_length=8, choices=State.choices, default=State.QUEUED)
    task_id = models.CharField(max_length=64, blank=True)  # Celery task id (distributed mode)
    result = models.JSONField(null=True, blank=True)
    # The result's headline facts (not repeated in `result`), for filters, OData and exports.
    status = models.CharField(max_length=32, blank=True)
    reward = models.FloatField(null=True, blank=True)
    speedup_vs_eager = models.FloatField(null=True, blank=True)
    speedup_vs_compile = models.FloatField(null=True, blank=True)
    coverage = models.FloatField(null=True, blank=True)
    submitted_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["team", "state"])]

    def __str__(self) -> str:
        return f"Evaluation {self.pk} ({self.state}/{self.status or '-'})"

    @property
    def is_pending(self) -> bool:
        return self.state in self.PENDING_STATES
