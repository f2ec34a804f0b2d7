"""Audit entries in words ("added bob as reviewer"), the stored code kept for tooltips."""

from __future__ import annotations

from django import template

register = template.Library()

PLAIN = {
    "kernel_proposed": "proposed a kernel for review",
    "kernel_approved": "approved a kernel",
    "kernel_rejected": "rejected a kernel",
    "kernel_duplicate_approval_removed": "removed a duplicate approval of a kernel",
    "api_key_created": "created an API key",
    "api_key_revoked": "revoked an API key",
}


@register.filter
def audit_words(event) -> str:
    details = event.details or {}
    user, old, new = details.get("user", "a user"), details.get("old_role"), details.get("new_role")
    if event.action == "membership_role_changed":
        if not old:
            return f"added {user} to the team as {new}"
        return f"changed {user}'s role from {old} to {new}"
    if event.action == "membership_removed":
        return f"removed {user} ({old}) from the team"
    if event.action in PLAIN:
        name = details.get("name")
        return PLAIN[event.action] + (f" “{name}”" if name and "api_key" in event.action else "")
    return event.action.replace("_", " ")
