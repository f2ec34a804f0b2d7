from django.contrib import admin

from knowledge.models import Document, Skill


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ("title", "kind", "vendor", "category", "status", "chunk_count", "created_at")
    list_filter = ("status", "category", "kind")
    search_fields = ("title", "filename")
    readonly_fields = ("content_hash", "stored_path", "progress", "message", "chunk_count")


@admin.register(Skill)
class SkillAdmin(admin.ModelAdmin):
    list_display = ("title", "family", "hardware", "observations", "speedup_mean", "retired")
    list_filter = ("retired", "hardware", "family")
    search_fields = ("title", "transformation", "description")
