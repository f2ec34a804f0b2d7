from django import forms
from django.contrib import admin, messages
from django.utils import timezone

from kernelhub.teams.models import ApiKey, Membership, Team
from kernelhub.teams.selectors import user_can
from kernelhub.teams.services import (
    api_key_create,
    api_key_revoke,
    membership_remove,
    membership_set,
)


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "created_at")
    prepopulated_fields = {"slug": ("name",)}
    inlines = [MembershipInline]

    def save_formset(self, request, form, formset, change):
        if formset.model is not Membership:
            return super().save_formset(request, form, formset, change)
        # Role changes go through the service, so each one lands in the audit trail.
        memberships = formset.save(commit=False)
        for membership in formset.deleted_objects:
            membership_remove(membership=membership, actor=request.user)
        for membership in memberships:
            membership_set(team=form.instance, user=membership.user, role=membership.role,
                           actor=request.user)


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ("user", "team", "role")
    list_filter = ("role", "team")

    def save_model(self, request, obj, form, change):
        # Through the service: every role change lands in the audit trail.
        if change and {"team", "user"} & set(form.changed_data):
            membership_remove(membership=Membership.objects.get(pk=obj.pk), actor=request.user)
        obj.pk = membership_set(team=obj.team, user=obj.user, role=obj.role,
                                actor=request.user).pk

    def delete_model(self, request, obj):
        membership_remove(membership=obj, actor=request.user)

    def delete_queryset(self, request, queryset):
        for membership in queryset.select_related("team", "user"):
            membership_remove(membership=membership, actor=request.user)


class ApiKeyAdminForm(forms.ModelForm):
    """A key acts for its creator (their role in the key's team decides what it may write),
    so the admin user who creates one must be an admin of that team."""

    creator = None  # set per request by ApiKeyAdmin.get_form

    class Meta:
        model = ApiKey
        fields = ("team", "name", "scope", "revoked_at")

    def clean(self):
        data = super().clean()
        team = data.get("team")
        if self.instance.pk is None and team is not None and not user_can(
                self.creator, team, "manage"):
            raise forms.ValidationError(
                f"You are not an admin of team {team.name!r}. A key acts for the user who "
                "created it, so add yourself to the team as admin first, or let one of its "
                "admins create the key on the team's API keys page.")
        return data


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    form = ApiKeyAdminForm
    list_display = ("name", "team", "prefix", "scope", "created_by", "created_at",
                    "last_used_at", "revoked_at")
    list_filter = ("scope", "team")
    readonly_fields = ("prefix", "hashed_key", "created_by", "created_at", "last_used_at")
    fields = ("team", "name", "scope", "prefix", "hashed_key", "created_by", "created_at",
              "last_used_at", "revoked_at")
    actions = ["revoke_keys"]

    def get_readonly_fields(self, request, obj=None):
        # A revoked key stays revoked: issue a new one instead.
        fields = super().get_readonly_fields(request, obj)
        return (*fields, "revoked_at") if obj is not None and obj.revoked_at else fields

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        form.creator = request.user
        return form

    def save_model(self, request, obj, form, change):
        if change:
            if "revoked_at" in form.changed_data and obj.revoked_at is not None:
                # Revocation goes through the service (audit trail); its time is now.
                api_key_revoke(api_key=ApiKey.objects.get(pk=obj.pk), actor=request.user)
                obj.revoked_at = ApiKey.objects.get(pk=obj.pk).revoked_at
                form.changed_data.remove("revoked_at")
            return super().save_model(request, obj, form, change)
        issued = api_key_create(team=obj.team, name=obj.name, scope=obj.scope,
                                created_by=request.user)
        obj.pk = issued.api_key.pk
        obj.refresh_from_db()
        messages.warning(request, f"New API key (shown once, copy it now): {issued.raw_key}")

    @admin.action(description="Revoke the selected API keys")
    def revoke_keys(self, request, queryset):
        count = 0
        for api_key in queryset.filter(revoked_at__isnull=True):
            api_key_revoke(api_key=api_key, actor=request.user)
            count += 1
        messages.success(request, f"Revoked {count} API key(s) at {timezone.now():%H:%M:%S} UTC.")
