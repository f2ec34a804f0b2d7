from django.conf import settings
from django.db import models


class Role(models.TextChoices):
    VIEWER = "viewer", "Viewer"
    ENGINEER = "engineer", "Engineer"
    REVIEWER = "reviewer", "Reviewer"
    ADMIN = "admin", "Admin"


# What each role may do; admin may do everything.
ROLE_PERMISSIONS: dict[str, set[str]] = {
    Role.VIEWER: {"view"},
    Role.ENGINEER: {"view", "launch", "upload", "propose"},
    Role.REVIEWER: {"view", "review", "propose"},
    Role.ADMIN: {"view", "launch", "upload", "propose", "review", "manage"},
}


class Team(models.Model):
    name = models.CharField(max_length=100, unique=True)
    slug = models.SlugField(max_length=100, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.VIEWER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["team", "user"], name="unique_membership")
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"

    def allows(self, action: str) -> bool:
        return action in ROLE_PERMISSIONS.get(self.role, set())


class ApiKeyScope(models.TextChoices):
    READ_ONLY = "read", "Read-only"
    READ_WRITE = "write", "Read-write"


class ApiKey(models.Model):
    """A team's API key. Only a SHA-256 hash is stored; the key is shown once."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, db_index=True)
    hashed_key = models.CharField(max_length=64, unique=True)
    scope = models.CharField(max_length=8, choices=ApiKeyScope.choices, default=ApiKeyScope.READ_ONLY)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…, {self.team})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    @property
    def can_write(self) -> bool:
        return self.scope == ApiKeyScope.READ_WRITE
