from django.contrib import admin

from kernelhub.review.models import AuditEvent, Review


@admin.register(Review)
class ReviewAdmin(admin.ModelAdmin):
    list_display = ("candidate", "team", "hardware", "status", "reviewer", "decided_at")
    list_filter = ("status", "team", "hardware")


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ("created_at", "team", "actor", "action", "target_type", "target_id")
    list_filter = ("action", "team")

    def has_change_permission(self, request, obj=None):  # the trail is append-only
        return False

    def has_delete_permission(self, request, obj=None):
        return False
