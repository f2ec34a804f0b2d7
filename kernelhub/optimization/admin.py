from django.contrib import admin

from kernelhub.optimization.models import (
    Candidate,
    EvaluationJob,
    HardwareTarget,
    Problem,
    SearchSession,
    SessionEvent,
    SessionLease,
    WorkerPresence,
)


@admin.register(HardwareTarget)
class HardwareTargetAdmin(admin.ModelAdmin):
    list_display = ("name", "vendor", "architecture", "memory_bandwidth_gbs", "bf16_tflops",
                    "ceilings_source")


@admin.register(Problem)
class ProblemAdmin(admin.ModelAdmin):
    list_display = ("name", "family", "team", "dtype", "created_at")
    list_filter = ("family", "team")
    search_fields = ("name",)


@admin.register(SearchSession)
class SearchSessionAdmin(admin.ModelAdmin):
    list_display = ("id", "problem", "hardware", "team", "strategy", "status",
                    "evaluated_count", "best_speedup_vs_eager", "created_at")
    list_filter = ("status", "strategy", "team")


@admin.register(Candidate)
class CandidateAdmin(admin.ModelAdmin):
    list_display = ("node_id", "session", "depth", "status", "reward", "speedup_vs_eager")
    list_filter = ("status",)


@admin.register(SessionEvent)
class SessionEventAdmin(admin.ModelAdmin):
    list_display = ("session", "seq", "type", "created_at")
    list_filter = ("type",)


@admin.register(EvaluationJob)
class EvaluationJobAdmin(admin.ModelAdmin):
    list_display = ("key", "session", "queue", "state", "attempts", "worker", "queued_at",
                    "finished_at")
    list_filter = ("state", "queue")


@admin.register(SessionLease)
class SessionLeaseAdmin(admin.ModelAdmin):
    list_display = ("session", "owner", "expires_at", "relaunches")


@admin.register(WorkerPresence)
class WorkerPresenceAdmin(admin.ModelAdmin):
    list_display = ("name", "queues", "gpu_name", "busy", "current_candidate", "beat_at")
