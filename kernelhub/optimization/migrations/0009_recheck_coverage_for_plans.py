"""Coverage answers stored before kernel plans were have no plan: they are checked again (the
same path as an edited source: stale until the background check or a session's loop answers),
so every problem page can show its plan and the refactored analysis answers once."""

from django.db import migrations

ANSWERED = ("covered", "uncovered")


def recheck_answers_without_a_plan(apps, schema_editor):
    Problem = apps.get_model("optimization", "Problem")
    Problem.objects.filter(offline_coverage_state__in=ANSWERED,
                           offline_coverage_plan={}).update(offline_coverage_sha256="")


class Migration(migrations.Migration):

    dependencies = [("optimization", "0008_problem_offline_coverage_plan")]

    operations = [migrations.RunPython(recheck_answers_without_a_plan, migrations.RunPython.noop)]
