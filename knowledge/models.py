from django.conf import settings
from django.db import models
from django.db.models import Q


class Category(models.TextChoices):
    HARDWARE_SPECIFIC = "hardware-specific", "Hardware-specific"
    GENERAL_OPTIMIZATION = "general-optimization", "General optimization"
    CORRECTNESS_CONSTRAINTS = "correctness-constraints", "Correctness constraints"


# Hardware tag of vendor-neutral pages: they match every hardware filter.
GENERIC_HARDWARE = "generic"


class Document(models.Model):
    """An uploaded manual. It belongs to a team; a team admin may share it with every team.

    A document without a team (uploaded before documents had teams, or by an operator
    without --team) is seen by staff and superusers only, until someone assigns it."""

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting"
        PROCESSING = "processing", "Indexing"
        READY = "ready", "Ready"
        FAILED = "failed", "Failed"

    title = models.CharField(max_length=300)
    filename = models.CharField(max_length=255)
    kind = models.CharField(max_length=16)  # pdf, markdown, rst, html, text
    vendor = models.CharField(max_length=64, blank=True)
    hardware = models.JSONField(default=list)  # lower-case tags, e.g. ["h100", "sm90"]
    category = models.CharField(max_length=32, choices=Category.choices)
    content_hash = models.CharField(max_length=64, db_index=True)  # SHA-256 of the bytes
    size_bytes = models.BigIntegerField()
    pages = models.PositiveIntegerField(null=True, blank=True)
    stored_path = models.CharField(max_length=500)  # relative to KERNELHUB_DATA_DIR
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    progress = models.PositiveSmallIntegerField(default=0)  # 0-100
    message = models.TextField(blank=True)
    # What indexing has done so far, for long documents: stage, pages_done/pages_total,
    # chunks_done/chunks_total, chunks_reused, eta_s, failed_pages [[page, why], ...].
    progress_detail = models.JSONField(default=dict, blank=True)
    # Set by document_cancel; indexing stops at its next progress report.
    cancel_requested = models.BooleanField(default=False)
    chunk_count = models.PositiveIntegerField(default=0)
    embedding_model = models.CharField(max_length=100, blank=True)
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="kb_documents",
    )
    team = models.ForeignKey(
        "teams.Team", null=True, blank=True, on_delete=models.SET_NULL, related_name="kb_documents"
    )
    # Visible to every team; only an admin (of the team, or a superuser) sets it.
    shared = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    indexed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # A failed upload does not block uploading the same file again; another
            # team may hold the same manual (it cannot see this team's copy).
            models.UniqueConstraint(
                fields=["team", "content_hash"], condition=~Q(status="failed"),
                name="kb_document_unique_content_per_team",
            )
        ]

    def __str__(self) -> str:
        return self.title

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.READY, self.Status.FAILED)


class Chunk(models.Model):
    """A passage of a document; its vector lives in Chroma under id str(pk)."""

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks")
    ordinal = models.PositiveIntegerField()
    text = models.TextField()
    section = models.CharField(max_length=1000, blank=True)
    page = models.PositiveIntegerField(null=True, blank=True)
    token_count = models.PositiveIntegerField(default=0)
    # SHA-256 of exactly what was embedded (heading context + text): a re-index reuses the
    # vector of a chunk whose hash and model are unchanged instead of embedding it again.
    content_hash = models.CharField(max_length=64, blank=True, db_index=True)

    class Meta:
        ordering = ["document_id", "ordinal"]
        constraints = [
            models.UniqueConstraint(fields=["document", "ordinal"], name="kb_chunk_unique_ordinal")
        ]

    def __str__(self) -> str:
        return f"{self.document_id}#{self.ordinal}"


class Skill(models.Model):
    """A lesson distilled from successful search steps: what changed, where, and the gain.

    It belongs to the team of the sessions it came from (shared like documents)."""

    title = models.CharField(max_length=300)
    description = models.TextField(blank=True)
    transformation = models.CharField(max_length=200)
    params = models.JSONField(default=dict, blank=True)
    family = models.CharField(max_length=64, blank=True)  # operator family, e.g. "softmax"
    hardware = models.CharField(max_length=64, blank=True)
    bottleneck_before = models.CharField(max_length=64, blank=True)
    bottleneck_after = models.CharField(max_length=64, blank=True)
    speedup_mean = models.FloatField(default=1.0)
    speedup_best = models.FloatField(default=1.0)
    advantage_mean = models.FloatField(default=0.0)
    observations = models.PositiveIntegerField(default=1)  # successful steps merged into it
    sessions = models.JSONField(default=list, blank=True)  # ids of the sessions it came from
    source_nodes = models.JSONField(default=list, blank=True)
    shape_class = models.CharField(max_length=100, blank=True)  # e.g. "rows:len2^10:n2^8"
    helped_count = models.PositiveIntegerField(default=0)
    not_helped_count = models.PositiveIntegerField(default=0)
    # Mean of node speedup / parent speedup over the measured uses (0 for a failed node).
    gain_mean = models.FloatField(null=True, blank=True)
    gain_uses = models.PositiveIntegerField(default=0)
    last_used_at = models.DateTimeField(null=True, blank=True)
    retired = models.BooleanField(default=False)
    retired_automatically = models.BooleanField(default=False)
    retired_reason = models.CharField(max_length=500, blank=True)
    # A reviewer restored it: only uses after this count towards retiring it again.
    restored_at = models.DateTimeField(null=True, blank=True)
    team = models.ForeignKey(
        "teams.Team", null=True, blank=True, on_delete=models.SET_NULL, related_name="kb_skills"
    )
    shared = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-observations", "-speedup_mean"]

    def __str__(self) -> str:
        return self.title

    @property
    def uses(self) -> int:
        return self.helped_count + self.not_helped_count

    @property
    def help_rate(self) -> float | None:
        return self.helped_count / self.uses if self.uses else None


class SkillUse(models.Model):
    """One node a skill shaped in a later session, and whether it beat its parent."""

    skill = models.ForeignKey(Skill, on_delete=models.CASCADE, related_name="uses_record")
    session = models.ForeignKey("optimization.SearchSession", null=True, blank=True,
                                on_delete=models.SET_NULL, related_name="skill_uses")
    node_id = models.CharField(max_length=32, blank=True)
    helped = models.BooleanField()
    gain = models.FloatField(null=True, blank=True)  # node speedup / parent speedup
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            # A session that finishes again (resumed) does not count its nodes twice.
            models.UniqueConstraint(fields=["skill", "session", "node_id"],
                                    condition=Q(session__isnull=False),
                                    name="kb_skill_use_once_per_node"),
        ]

    def __str__(self) -> str:
        return f"skill {self.skill_id} at {self.session_id}:{self.node_id}"
