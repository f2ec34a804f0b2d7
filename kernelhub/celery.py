"""Celery app for the distributed mode.

Queues: `search` runs session loops; `gpu.<target>` runs evaluations, one worker process
per GPU (`CUDA_VISIBLE_DEVICES`). In the embedded default tasks run eagerly or in threads.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kernelhub.settings")

app = Celery("kernelhub")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
