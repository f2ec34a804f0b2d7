from django.conf import settings
from django.db import models

from kernelhub.optimization.models import Candidate, HardwareTarget
from kernelhub.teams.models import Team


class Review(models.Model):
    """A kernel proposed for production and the reviewer's decision on it."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="reviews")
    candidate = models.ForeignKey(Candidate, on_delete=models.CASCADE, related_name="reviews")
    hardware = models.ForeignKey(HardwareTarget, on_delete=models.PROTECT, related_name="+")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    proposed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )
    proposed_at = models.DateTimeField(auto_now_add=True)
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    comment = models.TextField(blank=True)
    # The numbers the decision was made on, frozen at decision time.
    metrics = models.JSONField(default=dict, blank=True)
    integrity_override = models.BooleanField(default=False)
    override_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["-proposed_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["candidate"], condition=models.Q(status="pending"),
                name="one_pending_review_per_candidate",
            ),
            # A candidate is approved at most once: one kernel row per candidate in the BI feeds.
            models.UniqueConstraint(
                fields=["candidate"], condition=models.Q(status="approved"),
                name="one_approval_per_candidate",
            ),
        ]

    def __str__(self) -> str:
        return f"Review of {self.candidate} ({self.status})"


class AuditEvent(models.Model):
    """Append-only trail of decisions and sensitive actions.

    `team` is empty only for objects no team owns (legacy knowledge-base rows)."""

    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.CASCADE,
                             related_name="audit_events")
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    action = models.CharField(max_length=64)
    target_type = models.CharField(max_length=64)
    target_id = models.CharField(max_length=64)
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.actor} {self.action} {self.target_type}:{self.target_id}"
