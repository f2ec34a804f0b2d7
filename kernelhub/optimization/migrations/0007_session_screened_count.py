"""How many configurations a session screened (issue 29), beside the evaluations."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [("optimization", "0006_candidate_facts_stored_once")]

    operations = [
        migrations.AddField(
            model_name="searchsession", name="screened_count",
            field=models.PositiveIntegerField(default=0),
        ),
    ]
