"""Background indexing: a Celery task in the distributed mode, a thread in the embedded one."""

from __future__ import annotations

import logging
import threading

from celery import shared_task
from django.conf import settings
from django.db import close_old_connections, transaction

log = logging.getLogger(__name__)


@shared_task(name="knowledge.ingest_document")
def ingest_document_task(document_id: int) -> None:
    from knowledge.services import document_process

    document_process(document_id)


def _run_in_thread(document_id: int) -> None:
    from knowledge.services import document_process

    try:
        document_process(document_id)
    except Exception:  # the thread has no caller to tell; document_process records failures
        log.exception("background indexing of document %s crashed", document_id)
    finally:
        close_old_connections()


def uses_celery() -> bool:
    return not settings.CELERY_TASK_ALWAYS_EAGER and bool(settings.REDIS_URL)


def enqueue_ingest(document_id: int) -> None:
    """Index the document in the background, once the transaction that stored it commits."""

    def start() -> None:
        if uses_celery():
            ingest_document_task.delay(document_id)
        else:
            threading.Thread(target=_run_in_thread, args=(document_id,),
                             name=f"kb-ingest-{document_id}", daemon=True).start()

    transaction.on_commit(start)
