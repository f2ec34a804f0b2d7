"""KernelHub: the Django project (web apps, API, session runner)."""

__version__ = "0.1.0"

# Celery's app loads with Django so that `shared_task` binds to it.
try:
    from kernelhub.celery import app as celery_app  # noqa: E402,F401
except ImportError:  # celery missing: the embedded default still works
    celery_app = None
