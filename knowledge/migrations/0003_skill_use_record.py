"""Skills keep a record of their later use (SkillUse rows), a shape class, a mean gain, and
whether they were retired automatically (a reviewer may restore them)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('knowledge', '0002_team_scoping'),
        ('optimization', '0001_initial'),
    ]

    operations = [
        migrations.AddField(
            model_name='skill',
            name='gain_mean',
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='skill',
            name='gain_uses',
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name='skill',
            name='last_used_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='skill',
            name='restored_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='skill',
            name='retired_automatically',
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name='skill',
            name='retired_reason',
            field=models.CharField(blank=True, max_length=500),
        ),
        migrations.AddField(
            model_name='skill',
            name='shape_class',
            field=models.CharField(blank=True, max_length=100),
        ),
        migrations.CreateModel(
            name='SkillUse',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('node_id', models.CharField(blank=True, max_length=32)),
                ('helped', models.BooleanField()),
                ('gain', models.FloatField(blank=True, null=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('session', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='skill_uses', to='optimization.searchsession')),
                ('skill', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='uses_record', to='knowledge.skill')),
            ],
            options={
                'ordering': ['-created_at', '-pk'],
                'constraints': [models.UniqueConstraint(condition=models.Q(('session__isnull', False)), fields=('skill', 'session', 'node_id'), name='kb_skill_use_once_per_node')],
            },
        ),
    ]
