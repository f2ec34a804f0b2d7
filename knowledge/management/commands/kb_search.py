import json

from django.core.management.base import BaseCommand, CommandError

from knowledge.errors import KnowledgeInputError
from knowledge.models import Category
from knowledge.retrieval import retrieve
from knowledge.selectors import KnowledgeScope


class Command(BaseCommand):
    help = "Ask the knowledge base a question; --json prints one JSON list on the last line."

    def add_arguments(self, parser):
        parser.add_argument("question")
        parser.add_argument("--k", type=int, default=5)
        parser.add_argument("--hardware", default=None)
        parser.add_argument("--category", action="append", choices=Category.values,
                            help="repeat to allow several")
        parser.add_argument("--json", action="store_true")
        parser.add_argument("--team", default=None, metavar="SLUG",
                            help="answer as this team would (its documents and shared ones); "
                                 "default: the whole knowledge base")

    def handle(self, *args, question, k, hardware, category, json: bool, team=None, **options):
        if k < 1:
            raise CommandError("--k must be at least 1")
        scope = KnowledgeScope.ALL
        if team:
            from kernelhub.teams.models import Team

            found = Team.objects.filter(slug=team).first()
            if found is None:
                raise CommandError(f"--team {team}: no team has that slug")
            scope = KnowledgeScope.for_teams([found.pk])
        try:
            results = retrieve(question, hardware=hardware, categories=category, k=k, scope=scope)
        except KnowledgeInputError as exc:
            raise CommandError(str(exc)) from None
        if json:
            self.stdout.write(_json([r.to_dict() for r in results]))
            return
        if not results:
            self.stdout.write("No passages found.")
        for rank, r in enumerate(results, start=1):
            where = f"p. {r.page}, " if r.page else ""
            self.stdout.write(f"{rank}. {r.document} ({where}{r.section or 'no section'}) "
                              f"score {r.score:.4f}")
            self.stdout.write("   " + " ".join(r.text.split())[:300])


def _json(value) -> str:
    return json.dumps(value, ensure_ascii=False)
