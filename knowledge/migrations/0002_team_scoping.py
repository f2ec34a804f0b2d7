"""Documents and skills belong to a team; an admin may share them with every team.

Existing rows: documents keep the team they were uploaded for. A skill gets the team of
the sessions it was distilled from when they all belong to one team. Anything left
without a team (no upload team, skills merged across teams, sessions gone) is visible to
staff and superusers only until someone assigns it: the safe choice, since nobody can
tell which team may read it. The vectors in Chroma get their team metadata on the next
`manage.py kb_reindex` (until then vector search skips them; word search still finds them
for the teams that may read them).
"""

import django.db.models.deletion
from django.db import migrations, models


def skills_take_their_sessions_team(apps, schema_editor):
    Skill = apps.get_model("knowledge", "Skill")
    SearchSession = apps.get_model("optimization", "SearchSession")
    for skill in Skill.objects.filter(team__isnull=True).iterator():
        ids = [int(s) for s in skill.sessions or [] if str(s).isdigit()]
        teams = set(SearchSession.objects.filter(pk__in=ids).values_list("team_id", flat=True))
        if len(teams) == 1 and len(ids) == len(skill.sessions or []):
            Skill.objects.filter(pk=skill.pk).update(team_id=teams.pop())


class Migration(migrations.Migration):

    dependencies = [
        ("knowledge", "0001_initial"),
        ("optimization", "0001_initial"),
        ("teams", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="document",
            name="shared",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="skill",
            name="team",
            field=models.ForeignKey(blank=True, null=True,
                                    on_delete=django.db.models.deletion.SET_NULL,
                                    related_name="kb_skills", to="teams.team"),
        ),
        migrations.AddField(
            model_name="skill",
            name="shared",
            field=models.BooleanField(default=False),
        ),
        migrations.RemoveConstraint(
            model_name="document",
            name="kb_document_unique_content",
        ),
        migrations.AddConstraint(
            model_name="document",
            constraint=models.UniqueConstraint(condition=models.Q(("status", "failed"), _negated=True),
                                               fields=("team", "content_hash"),
                                               name="kb_document_unique_content_per_team"),
        ),
        migrations.RunPython(skills_take_their_sessions_team, migrations.RunPython.noop),
    ]
