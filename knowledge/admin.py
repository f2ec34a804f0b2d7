from django.contrib import admin

from knowledge import services
from knowledge.models import Document, Skill


def _save_through_services(request, obj, form, change, super_save, *, assign, share) -> None:
    """Team and sharing change through the services (role check, audit trail, Chroma
    metadata); the other fields are saved as usual."""
    changed = set(form.changed_data) if change else set()
    new_team, new_shared = obj.team, obj.shared
    if change and changed & {"team", "shared"}:
        old = type(obj).objects.get(pk=obj.pk)
        obj.team, obj.shared = old.team, old.shared
    super_save()
    if "team" in changed:
        assign(obj, new_team, request.user)
    if "shared" in changed:
        share(obj, new_shared, request.user)


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ("title", "team", "shared", "kind", "vendor", "category", "status",
                    "chunk_count", "created_at")
    list_filter = ("status", "category", "kind", "shared", "team")
    search_fields = ("title", "filename")
    readonly_fields = ("content_hash", "stored_path", "progress", "message", "chunk_count")

    def save_model(self, request, obj, form, change):
        _save_through_services(
            request, obj, form, change, lambda: super(DocumentAdmin, self).save_model(
                request, obj, form, change),
            assign=lambda d, team, user: services.document_assign_team(document=d, team=team, user=user),
            share=lambda d, shared, user: services.document_set_shared(document=d, shared=shared, user=user),
        )

    def delete_model(self, request, obj):
        services.document_delete(obj, user=request.user)

    def delete_queryset(self, request, queryset):
        for document in queryset:
            services.document_delete(document, user=request.user)


@admin.register(Skill)
class SkillAdmin(admin.ModelAdmin):
    list_display = ("title", "team", "shared", "family", "hardware", "observations",
                    "speedup_mean", "retired")
    list_filter = ("retired", "shared", "team", "hardware", "family")
    search_fields = ("title", "transformation", "description")

    def save_model(self, request, obj, form, change):
        def assign(skill, team, user):
            services.skill_assign_team(skill=skill, team=team, user=user)

        _save_through_services(
            request, obj, form, change, lambda: super(SkillAdmin, self).save_model(
                request, obj, form, change),
            assign=assign,
            share=lambda s, shared, user: services.skill_set_shared(skill=s, shared=shared, user=user),
        )
