"""Writes to the knowledge base. The database and Chroma change together or not at all.

Every write checks the actor's role in the owning team (`access`): engineers and admins
("upload") add, edit, re-index and delete their team's documents and skills; only admins
("manage", or a superuser) share them with every team. `user=None` is the system itself
(management commands, the session runner). Deletions, retirements, sharing and team
changes land in the audit trail (kernelhub.review).

One module per responsibility; callers import from here:
  access.py     who may write, the audit trail
  documents.py  upload, new versions, cancel, delete
  indexing.py   parse, chunk, embed, store (with progress); re-index
  skills.py     distil, score by later use, edit, retire, restore
  sharing.py    share with every team, move to another team (documents and skills alike)
"""

from knowledge.services.access import user_may
from knowledge.services.documents import (
    document_cancel,
    document_check_size,
    document_delete,
    document_ingest_file,
    document_replace_file,
    document_submit,
    document_upload,
    normalize_hardware,
)
from knowledge.services.indexing import (
    PROGRESS_INTERVAL_S,
    IngestCancelled,
    document_process,
    documents_reindex,
)
from knowledge.services.sharing import (
    document_assign_team,
    document_set_shared,
    skill_assign_team,
    skill_set_shared,
)
from knowledge.services.skills import (
    RETIRE_AFTER_FAILURES,
    SKILL_EDITABLE,
    distill_session_skills,
    session_record_skill_use,
    skill_record_outcome,
    skill_restore,
    skill_retire,
    skill_update,
    user_may_restore,
)

__all__ = [
    "PROGRESS_INTERVAL_S", "RETIRE_AFTER_FAILURES", "SKILL_EDITABLE", "IngestCancelled",
    "distill_session_skills", "document_assign_team", "document_cancel", "document_check_size",
    "document_delete", "document_ingest_file", "document_process", "document_replace_file",
    "document_set_shared", "document_submit", "document_upload", "documents_reindex",
    "normalize_hardware", "session_record_skill_use", "skill_assign_team", "skill_record_outcome",
    "skill_restore", "skill_retire", "skill_set_shared", "skill_update", "user_may",
    "user_may_restore",
]
