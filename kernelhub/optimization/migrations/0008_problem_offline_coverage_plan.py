"""The kernel plan the coverage check found (issue 28), stored beside the coverage."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [("optimization", "0007_session_screened_count")]

    operations = [
        migrations.AddField(
            model_name="problem", name="offline_coverage_plan",
            field=models.JSONField(
                blank=True, default=dict,
                help_text="the kernel plan (search_engine's KernelPlan.to_dict): kernels or "
                          "refusal"),
        ),
    ]
