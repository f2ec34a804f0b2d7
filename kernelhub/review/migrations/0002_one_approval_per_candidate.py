"""A candidate is approved at most once.

Before the constraint can exist, candidates approved more than once (re-proposed and
approved again) keep their earliest approval; the later duplicates are deleted, and each
deletion is written to the audit trail so the trail still explains what happened.
"""

from django.db import migrations, models
from django.db.models import Count


def remove_duplicate_approvals(apps, schema_editor):
    Review = apps.get_model("review", "Review")
    AuditEvent = apps.get_model("review", "AuditEvent")
    duplicated = (Review.objects.filter(status="approved").values("candidate_id")
                  .annotate(n=Count("id")).filter(n__gt=1).values_list("candidate_id", flat=True))
    for candidate_id in list(duplicated):
        approvals = list(Review.objects.filter(candidate_id=candidate_id, status="approved")
                         .order_by(models.F("decided_at").asc(nulls_last=True), "id"))
        kept, extra = approvals[0], approvals[1:]
        for review in extra:
            AuditEvent.objects.create(
                team_id=review.team_id, actor=None, action="kernel_duplicate_approval_removed",
                target_type="review", target_id=str(review.pk),
                details={"candidate": candidate_id, "kept_review": kept.pk,
                         "decided_at": review.decided_at.isoformat() if review.decided_at
                         else None, "reason": "a candidate is approved at most once"},
            )
        Review.objects.filter(pk__in=[r.pk for r in extra]).delete()


class Migration(migrations.Migration):

    dependencies = [
        ("review", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(remove_duplicate_approvals, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="review",
            constraint=models.UniqueConstraint(
                condition=models.Q(("status", "approved")), fields=("candidate",),
                name="one_approval_per_candidate",
            ),
        ),
    ]
