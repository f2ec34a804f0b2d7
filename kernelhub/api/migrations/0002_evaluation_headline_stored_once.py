"""Each fact of a reward-service evaluation stored once: the headline facts (status,
reward, speedups, coverage) live in their columns, so `Evaluation.result` drops its copies
(a column left empty takes the result's value first). Reversible."""

from django.db import migrations

from kernelhub.migration_rows import rewrite_rows

# kernelhub.api.evaluations.HEADLINE, frozen here (a migration never follows later code).
HEADLINE = ("status", "reward", "speedup_vs_eager", "speedup_vs_compile", "coverage")
ERROR = "error"


def _strip(evaluation) -> bool:
    result = dict(evaluation.result)
    if not any(key in result for key in HEADLINE):
        return False
    for key in HEADLINE:
        value = result.pop(key, None)
        if getattr(evaluation, key) in (None, "") and value is not None:
            setattr(evaluation, key, value)
    evaluation.result = result
    return True


def _restore(evaluation) -> bool:
    keys = ("status",) if evaluation.state == ERROR else HEADLINE
    evaluation.result = {**{key: getattr(evaluation, key) for key in keys}, **evaluation.result}
    return True


def strip_copies(apps, schema_editor):
    rows = apps.get_model("api", "Evaluation").objects.exclude(result__isnull=True)
    rewrite_rows(rows, ["result", *HEADLINE], _strip)


def restore_copies(apps, schema_editor):
    rows = apps.get_model("api", "Evaluation").objects.exclude(result__isnull=True)
    rewrite_rows(rows, ["result"], _restore)


class Migration(migrations.Migration):

    dependencies = [
        ("api", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(strip_copies, restore_copies),
    ]
