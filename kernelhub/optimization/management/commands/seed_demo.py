"""Load the demo data: hardware targets, library problems, a demo team and an admin user.

Idempotent: `make run` calls it on every start. The admin's credentials come from
KERNELHUB_ADMIN_USER / KERNELHUB_ADMIN_PASSWORD, or are generated once and kept in
KERNELHUB_DATA_DIR/admin-credentials.txt (mode 600) so they can be printed again.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand

from kernelhub.optimization.models import Problem
from kernelhub.optimization.services import hardware_targets_sync, problem_create
from kernelhub.teams.models import Role, Team
from kernelhub.teams.services import membership_set, team_create

LIBRARY_DIR = Path(settings.BASE_DIR) / "search_engine" / "problems_library"
DEMO_TEAM = "Demo team"


def library_problem_files() -> list[Path]:
    if not LIBRARY_DIR.is_dir():
        return []
    return sorted(p for p in LIBRARY_DIR.glob("*.py") if not p.name.startswith("_"))


def family_of(path: Path) -> str:
    """Library files may name their family in a `FAMILY = "..."` line."""
    for line in path.read_text().splitlines():
        if line.startswith("FAMILY"):
            return line.split("=", 1)[1].strip().strip("\"'")
    return ""


class Command(BaseCommand):
    help = "Load hardware targets, library problems, a demo team and an admin user."

    def add_arguments(self, parser):
        parser.add_argument("--skip-problems", action="store_true",
                            help="do not validate and load the library problems")

    def handle(self, *args, **options):
        targets = hardware_targets_sync()
        self.stdout.write(f"hardware targets: {', '.join(t.name for t in targets)}")
        if not options["skip_problems"]:
            self.load_problems()
        username, password, generated = self.admin_credentials()
        user = self.ensure_admin(username, password)
        team = Team.objects.filter(name=DEMO_TEAM).first() or team_create(name=DEMO_TEAM)
        membership_set(team=team, user=user, role=Role.ADMIN)
        note = " (generated; kept in admin-credentials.txt)" if generated else ""
        self.stdout.write(self.style.SUCCESS(
            f"admin user: {username}  password: {password}{note}"
        ))

    def load_problems(self) -> None:
        for path in library_problem_files():
            name = path.stem
            if Problem.objects.filter(team=None, name=name).exists():
                continue
            try:
                # Coverage is computed in the background on the first page that shows it
                # (this command's process would end before a background thread finished).
                problem_create(name=name, source=path.read_text(), team=None,
                               family=family_of(path), request_offline_coverage=False)
                self.stdout.write(f"problem loaded: {name}")
            except ValidationError as exc:
                self.stderr.write(f"problem {name} skipped: {'; '.join(exc.messages)}")

    def admin_credentials(self) -> tuple[str, str, bool]:
        username = os.environ.get("KERNELHUB_ADMIN_USER", "admin")
        password = os.environ.get("KERNELHUB_ADMIN_PASSWORD")
        if password:
            return username, password, False
        stored = Path(settings.KERNELHUB_DATA_DIR) / "admin-credentials.txt"
        if stored.exists():
            saved_user, saved_password = stored.read_text().strip().split(":", 1)
            if saved_user == username:
                return username, saved_password, True
        password = secrets.token_urlsafe(12)
        stored.write_text(f"{username}:{password}\n")
        stored.chmod(0o600)
        return username, password, True

    def ensure_admin(self, username: str, password: str):
        User = get_user_model()
        user, _ = User.objects.get_or_create(username=username)
        user.is_staff = user.is_superuser = True
        user.set_password(password)
        user.save()
        return user
