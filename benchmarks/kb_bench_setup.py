"""What the knowledge-base benchmarks start from: Django on a throwaway data dir (SQLite,
embedded Chroma, the embedding model offline) and a line naming the embedding backend."""

from __future__ import annotations

import os
from pathlib import Path


def setup_django(data_dir: Path) -> None:
    """Django set up on `data_dir`, its database migrated (local services only)."""
    os.environ["KERNELHUB_DATA_DIR"] = str(data_dir)
    os.environ.pop("DATABASE_URL", None)
    os.environ.pop("CHROMA_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kernelhub.settings")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def backend_line() -> str:
    """The embedding backend, model, threads and load average, for the benchmark's output."""
    from knowledge.embeddings import EMBED_THREADS, backend_status

    status = backend_status()
    return (f"embedding backend {status.name} ({status.reason}); model id {status.model_id}; "
            f"{EMBED_THREADS} embedding threads; load average {os.getloadavg()[0]:.1f}")
