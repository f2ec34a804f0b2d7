"""Team pages: your teams, and (team admins only) the team's members and API keys."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from kernelhub.teams.forms import ApiKeyCreateForm, MemberForm
from kernelhub.teams.models import Membership
from kernelhub.teams.selectors import api_key_get_for_admin, api_key_list, team_get_for_admin
from kernelhub.teams.services import (
    api_key_create,
    api_key_revoke,
    membership_remove,
    membership_set,
)

NEW_KEY_SESSION_KEY = "kernelhub:new-api-key"


@login_required
@require_GET
def team_list(request):
    memberships = (Membership.objects.filter(user=request.user).select_related("team")
                   .order_by("team__name"))
    return render(request, "teams/team_list.html", {"memberships": memberships})


@login_required
@require_http_methods(["GET", "POST"])
def api_keys(request, slug: str):
    team = team_get_for_admin(user=request.user, slug=slug)
    form = ApiKeyCreateForm(request.POST or None)
    if request.method == "POST":
        if form.is_valid():
            issued = api_key_create(team=team, name=form.cleaned_data["name"],
                                    scope=form.cleaned_data["scope"], created_by=request.user)
            # Shown on the next page only (then dropped from the session): never stored.
            request.session[NEW_KEY_SESSION_KEY] = {"id": issued.api_key.pk,
                                                    "raw_key": issued.raw_key}
            return redirect("teams:api_keys", slug=team.slug)
        status = 400
    else:
        status = 200
    new_key = request.session.pop(NEW_KEY_SESSION_KEY, None)
    return render(request, "teams/api_keys.html", {
        "team": team, "form": form, "keys": api_key_list(team), "new_key": new_key,
    }, status=status)


@login_required
@require_POST
def api_key_revoke_view(request, slug: str, pk: int):
    api_key = api_key_get_for_admin(user=request.user, slug=slug, pk=pk)
    api_key_revoke(api_key=api_key, actor=request.user)
    messages.success(request, f"API key {api_key.name} ({api_key.prefix}…) revoked.")
    return redirect("teams:api_keys", slug=api_key.team.slug)


@login_required
@require_http_methods(["GET", "POST"])
def members(request, slug: str):
    """Team admins add members and change or remove their roles (every change audited)."""
    team = team_get_for_admin(user=request.user, slug=slug)
    form, status = MemberForm(request.POST or None), 200
    if request.method == "POST":
        if form.is_valid():
            user = form.cleaned_data["username"]
            try:
                membership_set(team=team, user=user, role=form.cleaned_data["role"],
                               actor=request.user)
            except (ValidationError, PermissionDenied) as exc:
                form.add_error(None, " ".join(getattr(exc, "messages", [str(exc)])))
            else:
                messages.success(request, f"{user.get_username()} is now "
                                 f"{form.cleaned_data['role']} of {team.name}.")
                return redirect("teams:members", slug=team.slug)
        status = 400
    rows = Membership.objects.filter(team=team).select_related("user").order_by("user__username")
    return render(request, "teams/members.html",
                  {"team": team, "form": form, "memberships": rows}, status=status)


@login_required
@require_POST
def member_remove(request, slug: str, pk: int):
    team = team_get_for_admin(user=request.user, slug=slug)
    membership = Membership.objects.filter(team=team, pk=pk).select_related("user").first()
    if membership is None:
        messages.error(request, "No such member of the team.")
    elif membership.user_id == request.user.pk:
        messages.error(request, "You cannot remove yourself; ask another admin.")
    else:
        membership_remove(membership=membership, actor=request.user)
        messages.success(request, f"{membership.user.get_username()} removed from {team.name}.")
    return redirect("teams:members", slug=team.slug)
