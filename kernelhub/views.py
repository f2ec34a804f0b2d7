"""Project-level views: health check and the team dashboard."""

from django.contrib.auth.decorators import login_required
from django.db import connection
from django.http import JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from kernelhub.dashboard import dashboard_summary


@require_GET
def healthz(request):
    """200 when the database answers, 503 otherwise (for load balancers and `make run`)."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # any database failure means unhealthy
        return JsonResponse({"status": "error", "database": str(exc)[:200]}, status=503)
    return JsonResponse({"status": "ok", "database": "ok"})


@login_required
def dashboard(request):
    return render(request, "dashboard.html", dashboard_summary(request.user))
