"""Each fact of a candidate stored once: the evaluation's headline facts live in their
columns, so `Candidate.result` drops its copies of them (a column left empty takes the
result's value first). Reversible: going back copies the columns into `result` again."""

from django.db import migrations

from kernelhub.migration_rows import rewrite_rows

# search_engine.candidate.FACTS, frozen here (a migration never follows later code).
FACTS = ("status", "message", "reward", "speedup_vs_eager", "speedup_vs_compile", "coverage",
         "timing", "diagnostics", "integrity_flags")
MESSAGE_CHARS = 4000


def _empty(value) -> bool:
    return value is None or value == "" or value == {} or value == []


def _strip(candidate) -> bool:
    result = dict(candidate.result or {})
    if not any(key in result for key in FACTS):
        return False
    for key in FACTS:
        value = result.pop(key, None)
        if _empty(getattr(candidate, key)) and not _empty(value):
            setattr(candidate, key, value[:MESSAGE_CHARS] if key == "message" else value)
    candidate.result = result
    return True


def _restore(candidate) -> bool:
    candidate.result = {**candidate.result, **{key: getattr(candidate, key) for key in FACTS}}
    return True


def strip_copies(apps, schema_editor):
    rows = apps.get_model("optimization", "Candidate").objects.exclude(result={})
    rewrite_rows(rows, ["result", *FACTS], _strip)


def restore_copies(apps, schema_editor):
    rows = apps.get_model("optimization", "Candidate").objects.exclude(result={})
    rewrite_rows(rows, ["result"], _restore)


class Migration(migrations.Migration):

    dependencies = [
        ("optimization", "0005_distributed_leases_and_presence"),
    ]

    operations = [
        migrations.RunPython(strip_copies, restore_copies),
    ]
