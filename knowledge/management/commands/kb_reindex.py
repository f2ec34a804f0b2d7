from django.core.management.base import BaseCommand

from knowledge.services import documents_reindex


class Command(BaseCommand):
    help = ("Re-chunk and re-embed every indexed document (after a model or chunking change); "
            "--document limits it to some.")

    def add_arguments(self, parser):
        parser.add_argument("--document", type=int, action="append", dest="document_ids",
                            metavar="ID", help="only this document (repeatable)")

    def handle(self, *args, document_ids=None, **options):
        documents, chunks = documents_reindex(document_ids=document_ids, output=self.stdout.write)
        self.stdout.write(f"kb_reindex: {documents} documents, {chunks} chunks")
