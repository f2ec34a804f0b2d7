"""Health check, login, the (empty) dashboard, settings and the demo seed."""

import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

pytestmark = pytest.mark.django_db
REPO = Path(__file__).resolve().parents[2]


def test_healthz_ok(client):
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json()["database"] == "ok"


def test_healthz_503_when_database_is_down(client, monkeypatch):
    from django.db import connection

    def broken_cursor(*args, **kwargs):
        raise RuntimeError("database is gone")

    monkeypatch.setattr(connection, "cursor", broken_cursor)
    response = client.get("/healthz")
    assert response.status_code == 503 and "gone" in response.json()["database"]


def test_dashboard_needs_login_then_renders(client, teams):
    response = client.get(reverse("dashboard"))
    assert response.status_code == 302 and reverse("login") in response["Location"]
    assert client.login(username="alpha-viewer", password="pw-viewer")
    page = client.get(reverse("dashboard")).content.decode()
    for section in ("running-sessions", "approved-kernels", "review-queue", "knowledge-size"):
        assert f'id="{section}"' in page
    assert "No session is running." in page


def test_login_page_and_logout(client, teams):
    assert client.get(reverse("login")).status_code == 200
    response = client.post(reverse("login"), {"username": "alpha-admin", "password": "pw-admin"})
    assert response.status_code == 302
    assert client.post(reverse("logout")).status_code == 302
    assert client.get(reverse("dashboard")).status_code == 302


def test_static_assets_are_local(client, teams):
    client.login(username="alpha-viewer", password="pw-viewer")
    page = client.get(reverse("dashboard")).content.decode()
    assert "htmx" in page and "http://" not in page.replace("http://testserver", "")
    assert "https://" not in page


def test_seed_demo_is_idempotent_and_prints_credentials(capsys, monkeypatch):
    monkeypatch.setenv("KERNELHUB_ADMIN_PASSWORD", "demo-pass-123")
    call_command("seed_demo", "--skip-problems")
    call_command("seed_demo", "--skip-problems")
    out = capsys.readouterr().out
    assert "admin user: admin  password: demo-pass-123" in out
    from kernelhub.optimization.models import HardwareTarget

    h200 = HardwareTarget.objects.get(name="h200")
    assert h200.memory_bandwidth_gbs == 4300 and h200.bf16_tflops == 790
    assert h200.multiprocessors == 132 and h200.ceilings_source == "measured"
    assert HardwareTarget.objects.get(name="mi300x").ceilings_source == "datasheet"
    assert HardwareTarget.objects.filter(name="interpreter").exists()


def test_admin_pages_exist_for_each_model(admin_client):
    for model in ("teams/team", "teams/membership", "teams/apikey", "optimization/hardwaretarget",
                  "optimization/problem", "optimization/searchsession", "optimization/candidate",
                  "optimization/sessionevent", "review/review", "review/auditevent"):
        assert admin_client.get(f"/admin/{model}/").status_code == 200, model


def test_check_deploy_is_clean_with_production_values(tmp_path):
    env = {
        "PATH": "/usr/bin:/bin", "DEBUG": "0", "SECRET_KEY": "x" * 64 + "-prod-secret-key-value",
        "ALLOWED_HOSTS": "kernelhub.example.com", "KERNELHUB_DATA_DIR": str(tmp_path),
    }
    result = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level",
                             "WARNING"], cwd=REPO, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_missing_secret_key_in_production_is_refused(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "DEBUG": "0", "KERNELHUB_DATA_DIR": str(tmp_path),
           "ALLOWED_HOSTS": "kernelhub.example.com"}
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=REPO, env=env,
                            capture_output=True, text=True)
    assert result.returncode != 0 and "SECRET_KEY must be set" in result.stderr


def _settings_of(env: dict) -> list[str]:
    code = ("import django; django.setup(); from django.conf import settings as s; "
            "print(s.DEBUG, s.KERNELHUB_HTTPS, getattr(s, 'SECURE_SSL_REDIRECT', False), "
            "s.SECRET_KEY)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO),
                              "DJANGO_SETTINGS_MODULE": "kernelhub.settings", **env}, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.split()


def test_the_embedded_default_is_safe_without_any_variable(tmp_path):
    """`make run` with nothing set: no debug pages, plain HTTP on loopback, and a secret key
    generated once into the data directory (the same key after a restart)."""
    debug, https, redirect, key = _settings_of({"KERNELHUB_DATA_DIR": str(tmp_path)})
    assert (debug, https, redirect) == ("False", "False", "False")
    stored = (tmp_path / "secret_key").read_text().strip()
    assert key == stored and len(key) >= 50 and "insecure" not in key
    assert (tmp_path / "secret_key").stat().st_mode & 0o077 == 0  # only the owner reads it
    assert _settings_of({"KERNELHUB_DATA_DIR": str(tmp_path)})[3] == key
    assert _settings_of({"KERNELHUB_DATA_DIR": str(tmp_path), "DEBUG": "1"})[0] == "True"
