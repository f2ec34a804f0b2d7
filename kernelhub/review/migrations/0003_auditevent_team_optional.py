"""The audit trail also records deletions of knowledge-base rows that no team owns yet."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("review", "0002_one_approval_per_candidate"),
        ("teams", "0001_initial"),
    ]

    operations = [
        migrations.AlterField(
            model_name="auditevent",
            name="team",
            field=models.ForeignKey(blank=True, null=True,
                                    on_delete=django.db.models.deletion.CASCADE,
                                    related_name="audit_events", to="teams.team"),
        ),
    ]
