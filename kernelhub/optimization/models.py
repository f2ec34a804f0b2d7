from django.conf import settings
from django.db import models

from kernelhub.teams.models import Team
from search_engine.evaluation.result import is_tainted


class HardwareTarget(models.Model):
    """A GPU (or the CPU interpreter) with the ceilings the roofline is drawn under."""

    class CeilingSource(models.TextChoices):
        MEASURED = "measured", "Measured on this project's hardware"
        DATASHEET = "datasheet", "Vendor datasheet"
        INTERPRETER = "interpreter", "CPU interpreter (no ceilings)"

    name = models.SlugField(max_length=32, unique=True)
    display_name = models.CharField(max_length=100)
    vendor = models.CharField(max_length=32)
    architecture = models.CharField(max_length=64)
    memory_bandwidth_gbs = models.FloatField(help_text="GB/s")
    fp32_tflops = models.FloatField()
    bf16_tflops = models.FloatField()
    multiprocessors = models.PositiveIntegerField()
    l2_bytes = models.BigIntegerField()
    shared_memory_per_block_bytes = models.PositiveIntegerField()
    ceilings_source = models.CharField(max_length=16, choices=CeilingSource.choices)
    notes = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.display_name

    @property
    def is_interpreter(self) -> bool:
        return self.name == "interpreter"


class Problem(models.Model):
    """A KernelBench-format problem. Library problems have no team and are visible to all.

    `offline_coverage_*`: whether the offline synthesizer covers it, computed once per
    source in the background (the analysis runs the problem in the sandbox)."""

    class Coverage(models.TextChoices):
        PENDING = "pending", "Checking"
        COVERED = "covered", "Covered"
        UNCOVERED = "uncovered", "Not covered"
        UNKNOWN = "unknown", "Unknown"

    team = models.ForeignKey(
        Team, null=True, blank=True, on_delete=models.CASCADE, related_name="problems"
    )
    name = models.CharField(max_length=200)
    family = models.CharField(max_length=64, blank=True)
    description = models.TextField(blank=True)
    source = models.TextField()
    source_sha256 = models.CharField(max_length=64)
    dtype = models.CharField(max_length=16, default="float32")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    offline_coverage_state = models.CharField(max_length=16, choices=Coverage.choices,
                                              default=Coverage.PENDING)
    offline_coverage_detail = models.TextField(blank=True)
    offline_coverage_family = models.CharField(max_length=32, blank=True)
    offline_coverage_ops = models.JSONField(default=list, blank=True)
    offline_coverage_plan = models.JSONField(
        default=dict, blank=True,
        help_text="the kernel plan (search_engine's KernelPlan.to_dict): kernels or refusal")
    offline_coverage_sha256 = models.CharField(
        max_length=64, blank=True, help_text="the source hash the stored coverage is for")
    offline_coverage_requested_at = models.DateTimeField(null=True, blank=True)
    offline_coverage_computed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["team", "name"], name="unique_problem_name_per_team")
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def offline_coverage_ready(self) -> bool:
        return (self.offline_coverage_state != self.Coverage.PENDING
                and self.offline_coverage_sha256 == self.source_sha256)

    @property
    def offline_coverage(self) -> dict:
        """{"state": pending | covered | uncovered | unknown, "detail", "family", "ops"}."""
        if not self.offline_coverage_ready:
            return {"state": self.Coverage.PENDING.value,
                    "detail": "checking whether the offline synthesizer covers it…",
                    "family": "", "ops": []}
        return {"state": self.offline_coverage_state, "detail": self.offline_coverage_detail,
                "family": self.offline_coverage_family, "ops": list(self.offline_coverage_ops)}


class Budget:
    """A session's budget limits and defaults: the form, the REST serializer and the
    service all read these (one rule)."""

    EVALUATIONS = (1, 10_000)
    MINUTES = (0.1, 24 * 60.0)
    COST_USD = (0.0, 1e6)
    DEFAULT_EVALUATIONS = 24
    DEFAULT_MINUTES = 30.0


class Screening:
    """A session's screening (issue 29) bounds, kept in `config` as `screen` (configurations
    screened per expansion; absent = the target's default) and `screen_finalists` (how many
    of them get the full evaluation): the form and the service read these."""

    CONFIGURATIONS = (0, 1024)
    FINALISTS = (1, 64)


class SearchSession(models.Model):
    class Strategy(models.TextChoices):
        MCTS = "mcts", "MCTS"
        EVOLUTION = "evolution", "Evolutionary"

    class SynthesizerKind(models.TextChoices):
        OFFLINE = "offline", "Offline templates"
        LLM = "llm", "LLM"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        PAUSED = "paused", "Paused"
        CANCELLED = "cancelled", "Cancelled"
        FINISHED = "finished", "Finished"
        FAILED = "failed", "Failed"

    ACTIVE_STATUSES = (Status.QUEUED, Status.RUNNING, Status.PAUSED)

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="sessions")
    problem = models.ForeignKey(Problem, on_delete=models.PROTECT, related_name="sessions")
    hardware = models.ForeignKey(HardwareTarget, on_delete=models.PROTECT, related_name="sessions")
    strategy = models.CharField(max_length=16, choices=Strategy.choices, default=Strategy.MCTS)
    synthesizer = models.CharField(
        max_length=16, choices=SynthesizerKind.choices, default=SynthesizerKind.OFFLINE
    )
    precision_policy = models.CharField(max_length=8, default="strict")
    budget_evaluations = models.PositiveIntegerField(default=24)
    budget_minutes = models.FloatField(default=30.0)
    budget_cost_usd = models.FloatField(default=0.0, help_text="0 = no LLM cost limit")
    seed = models.IntegerField(default=0)
    config = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    status_message = models.TextField(blank=True)
    baseline = models.JSONField(default=dict, blank=True)  # eager / compile timings of the root
    evaluated_count = models.PositiveIntegerField(default=0)
    # configurations screened (timed and spot-checked, finalists included): never
    # evaluations, which only `evaluated_count` counts
    screened_count = models.PositiveIntegerField(default=0)
    llm_cost_usd = models.FloatField(default=0.0)  # every request's, rejected ones too
    llm_prompt_tokens = models.PositiveBigIntegerField(default=0)
    llm_completion_tokens = models.PositiveBigIntegerField(default=0)
    llm_requests = models.PositiveIntegerField(default=0)
    # While paused for an LLM endpoint outage: {"status_code", "error", "failures",
    # "retry_in_s", "since"}; empty otherwise. The loop resumes by itself.
    llm_outage = models.JSONField(default=dict, blank=True)
    best_candidate = models.ForeignKey(
        "Candidate", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    best_speedup_vs_eager = models.FloatField(null=True, blank=True)
    best_speedup_vs_compile = models.FloatField(null=True, blank=True)
    last_seq = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Written by the loop that runs the session; a stale one means the loop is gone.
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"Session {self.pk}: {self.problem} on {self.hardware}"

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE_STATUSES


class Candidate(models.Model):
    """One node of a session's search tree and its evaluation."""

    session = models.ForeignKey(SearchSession, on_delete=models.CASCADE, related_name="candidates")
    node_id = models.CharField(max_length=64)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="children"
    )
    depth = models.PositiveIntegerField(default=0)
    source = models.TextField(blank=True)
    origin = models.JSONField(default=dict, blank=True)  # synthesizer, transformation, params, prompt
    status = models.CharField(max_length=32, default="pending")
    message = models.TextField(blank=True)
    reward = models.FloatField(null=True, blank=True)
    advantage = models.FloatField(null=True, blank=True)
    speedup_vs_eager = models.FloatField(null=True, blank=True)
    speedup_vs_compile = models.FloatField(null=True, blank=True)
    coverage = models.FloatField(null=True, blank=True)
    timing = models.JSONField(default=dict, blank=True)
    diagnostics = models.JSONField(default=dict, blank=True)
    integrity_flags = models.JSONField(default=list, blank=True)
    # The rest of the EvaluationResult: what has no column above (per-trial errors, target,
    # speedup label, ...); kernelhub.optimization.candidates composes the whole result.
    result = models.JSONField(default=dict, blank=True)
    retrieved_context = models.JSONField(default=list, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.FloatField(default=0.0)
    llm_model = models.CharField(max_length=200, blank=True)  # which model wrote it
    created_at = models.DateTimeField(auto_now_add=True)
    evaluated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["session", "id"]
        constraints = [
            models.UniqueConstraint(fields=["session", "node_id"], name="unique_node_per_session")
        ]
        indexes = [models.Index(fields=["session", "status"])]

    def __str__(self) -> str:
        return f"{self.node_id} ({self.status})"

    @property
    def team(self) -> Team:
        return self.session.team

    @property
    def is_tainted(self) -> bool:
        return is_tainted(self.integrity_flags)

    @property
    def shapes(self) -> dict:
        """Where it was verified and timed, and whether it is drop-in elsewhere."""
        from kernelhub.optimization.shapes import candidate_shapes

        return candidate_shapes(self)


class SessionEvent(models.Model):
    """The ordered event log of a session; the live page replays it, then streams."""

    session = models.ForeignKey(SearchSession, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    type = models.CharField(max_length=32)
    payload = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["session", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["session", "seq"], name="unique_event_seq")
        ]

    def __str__(self) -> str:
        return f"#{self.seq} {self.type}"


class SessionLease(models.Model):
    """Who runs a session's loop, until when. The loop renews it with its heartbeat; a loop
    that cannot take it does not start, and an expired one is taken over by the reaper."""

    session = models.OneToOneField(SearchSession, on_delete=models.CASCADE, primary_key=True,
                                   related_name="lease")
    owner = models.CharField(max_length=200)  # host:pid:token of the loop
    acquired_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    relaunches = models.PositiveIntegerField(default=0)  # by the reaper

    def __str__(self) -> str:
        return f"lease of session {self.session_id} by {self.owner}"


class EvaluationJob(models.Model):
    """One evaluation sent to a GPU queue: the ledger that makes delivery idempotent.

    `key` names the evaluation (a session's candidate source, or a reward-service row), so a
    resubmission, a redelivered message or a rebuilt loop finds the same row; only the
    delivery whose `task_id` is current may run it, and its result is stored once."""

    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        CANCELLED = "cancelled", "Cancelled"

    key = models.CharField(max_length=200, unique=True)
    session = models.ForeignKey(SearchSession, null=True, blank=True, on_delete=models.CASCADE,
                                related_name="evaluation_jobs")
    queue = models.CharField(max_length=64)
    request = models.JSONField()  # the EvaluationRequest, as sent
    task_id = models.CharField(max_length=64, blank=True)  # the current delivery
    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED)
    attempts = models.PositiveIntegerField(default=0)  # deliveries that started it
    broker_epoch = models.CharField(max_length=64, blank=True)  # Redis run_id when sent
    worker = models.CharField(max_length=200, blank=True)
    result = models.JSONField(null=True, blank=True)
    history = models.JSONField(default=list, blank=True)  # why it was sent again
    created_at = models.DateTimeField(auto_now_add=True)
    queued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["state", "queue"])]

    def __str__(self) -> str:
        return f"{self.key} ({self.state})"


class WorkerPresence(models.Model):
    """A Celery worker's heartbeat: what it serves, and what it is doing now."""

    name = models.CharField(max_length=200, unique=True)  # the Celery node name
    queues = models.CharField(max_length=500, blank=True)
    target = models.CharField(max_length=32, blank=True)  # "" for a search worker
    gpu_name = models.CharField(max_length=200, blank=True)
    busy = models.BooleanField(default=False)
    current_job = models.ForeignKey(EvaluationJob, null=True, blank=True,
                                    on_delete=models.SET_NULL, related_name="+")
    current_candidate = models.CharField(max_length=200, blank=True)
    pid = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField()
    beat_at = models.DateTimeField()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
