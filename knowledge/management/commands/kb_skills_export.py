"""Write a team's active skills to a JSON file the search reads without a database
(search_engine.search.skill_priors.SkillLibrary.load; benchmarks/skills_ablation.py --skills).
"""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from knowledge.selectors import KnowledgeScope, skill_list
from knowledge.skills import skill_prior


class Command(BaseCommand):
    help = "Export active skills (a team's and shared ones, or all) as a JSON skills file."

    def add_arguments(self, parser):
        parser.add_argument("path", metavar="FILE")
        parser.add_argument("--team", default=None, metavar="SLUG",
                            help="the team whose skills (and shared ones) to export; "
                                 "without it every active skill")

    def handle(self, *args, path, team=None, **options):
        from search_engine.search.skill_priors import SkillLibrary

        scope = KnowledgeScope.ALL
        if team:
            from kernelhub.teams.models import Team

            owner = Team.objects.filter(slug=team).first()
            if owner is None:
                raise CommandError(f"--team {team}: no team has that slug")
            scope = KnowledgeScope.for_teams([owner.pk])
        priors = [skill_prior(s) for s in skill_list(scope=scope).order_by("pk")]
        try:
            SkillLibrary(priors).save(Path(path))
        except OSError as exc:
            raise CommandError(f"cannot write {path}: {exc.strerror or exc}") from exc
        self.stdout.write(f"wrote {len(priors)} skill(s) to {path}")
