from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from knowledge.errors import KnowledgeInputError
from knowledge.filetypes import EXTENSIONS
from knowledge.models import Category
from knowledge.services import document_ingest_file


class Command(BaseCommand):
    help = "Index documents (PDF, Markdown, RST, HTML, text) from files or folders, recursively."

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+", metavar="PATH")
        parser.add_argument("--vendor", default="")
        parser.add_argument("--hardware", default="", help="comma-separated tags, e.g. h100,sm90")
        parser.add_argument("--category", default=Category.GENERAL_OPTIMIZATION,
                            choices=Category.values)
        parser.add_argument("--team", default=None, metavar="SLUG",
                            help="the team the documents belong to; without it (and without "
                                 "--shared) only staff see them until they are assigned")
        parser.add_argument("--shared", action="store_true",
                            help="visible to every team")

    def handle(self, *args, paths, vendor, hardware, category, team=None, shared=False,
               **options):
        owner = None
        if team:
            from kernelhub.teams.models import Team

            owner = Team.objects.filter(slug=team).first()
            if owner is None:
                raise CommandError(f"--team {team}: no team has that slug")
        files = []
        for raw in paths:
            path = Path(raw)
            if path.is_dir():
                files.extend(sorted(p for p in path.rglob("*")
                                    if p.is_file() and p.suffix.lower() in EXTENSIONS))
            elif path.is_file():
                files.append(path)
            else:
                raise CommandError(f"{raw}: no such file or folder")
        indexed = failed = chunks = 0
        for path in files:
            try:
                document = document_ingest_file(path, category=category, vendor=vendor,
                                                hardware=hardware, team=owner, shared=shared)
            except KnowledgeInputError as exc:
                failed += 1
                self.stderr.write(f"SKIPPED {path}: {exc}")
                continue
            indexed += 1
            chunks += document.chunk_count
            self.stdout.write(f"indexed {path}: document #{document.pk}, "
                              f"{document.chunk_count} chunks")
        self.stdout.write(f"kb_ingest: {indexed} indexed, {failed} skipped, {chunks} chunks "
                          f"from {len(files)} files")
        if failed and not indexed:
            raise CommandError("no document was indexed")
