"""Background indexing: one Celery task; `kernelhub.placement` decides where it runs (a
worker of the `search` queue in the distributed mode, a thread of the server otherwise)."""

from __future__ import annotations

from celery import shared_task

from kernelhub import placement
from knowledge.services import document_process


@shared_task(name="knowledge.ingest_document")
def ingest_document_task(document_id: int) -> None:
    document_process(document_id)  # records its own failures on the document


def enqueue_ingest(document_id: int) -> None:
    """Index the document in the background, once the transaction that stored it commits."""
    placement.document_ingest(document_id)
