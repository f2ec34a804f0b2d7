from django.contrib import admin, messages

from kernelhub.teams.models import ApiKey, Membership, Team
from kernelhub.teams.services import api_key_create


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "created_at")
    prepopulated_fields = {"slug": ("name",)}
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ("user", "team", "role")
    list_filter = ("role", "team")


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ("name", "team", "prefix", "scope", "created_at", "last_used_at", "revoked_at")
    list_filter = ("scope", "team")
    readonly_fields = ("prefix", "hashed_key", "created_at", "last_used_at")
    fields = ("team", "name", "scope", "prefix", "hashed_key", "created_at", "last_used_at", "revoked_at")

    def save_model(self, request, obj, form, change):
        if change:
            return super().save_model(request, obj, form, change)
        issued = api_key_create(team=obj.team, name=obj.name, scope=obj.scope, created_by=None)
        obj.pk = issued.api_key.pk
        messages.warning(request, f"New API key (shown once, copy it now): {issued.raw_key}")
