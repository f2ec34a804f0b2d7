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


def task_named(name: str):
    """A registered task by name (importing the apps' task modules on first use), so that
    callers need not import the module that defines it."""
    if name not in app.tasks:
        app.loader.import_default_modules()
    return app.tasks[name]
