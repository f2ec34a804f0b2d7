"""Project-level views: health check, the team dashboard and the error pages."""

from django.contrib.auth.decorators import login_required
from django.db import connection
from django.http import HttpResponsePermanentRedirect, HttpResponseServerError, JsonResponse
from django.shortcuts import render
from django.template import loader
from django.templatetags.static import static
from django.views import defaults
from django.views.decorators.http import require_GET

from kernelhub.dashboard import dashboard_charts, dashboard_summary


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


@require_GET
def favicon(request):
    """Browsers ask for /favicon.ico whatever the page says; send them to the hashed SVG."""
    return HttpResponsePermanentRedirect(static("favicon.svg"))


@login_required
def dashboard(request):
    return render(request, "dashboard.html", {**dashboard_summary(request.user),
                                              "charts": dashboard_charts(request.user)})


# --- error pages (used whenever DEBUG is off: never Django's debug page) -----------------

API_PREFIXES = ("/api/", "/odata")


def _wants_json(request) -> bool:
    return request.path.startswith(API_PREFIXES)


def error_403(request, exception=None):
    if _wants_json(request):
        return JsonResponse({"detail": "You do not have permission to do this."}, status=403)
    return defaults.permission_denied(request, exception, template_name="403.html")


def error_404(request, exception=None):
    if _wants_json(request):
        return JsonResponse({"detail": "Not found."}, status=404)
    return defaults.page_not_found(request, exception, template_name="404.html")


def error_400(request, exception=None):
    if _wants_json(request):
        return JsonResponse({"detail": "Bad request."}, status=400)
    return defaults.bad_request(request, exception, template_name="400.html")


def error_500(request):
    """The styled 500 page. Rendered without the request's context processors, so a page
    that failed because the database or the session is down still gets an answer."""
    if _wants_json(request):
        return JsonResponse({"detail": "Internal server error; it has been logged."},
                            status=500)
    try:
        body = loader.render_to_string("500.html", {"request_path": request.path})
    except Exception:  # the last line of defence never raises
        return HttpResponseServerError("<h1>Server error (500)</h1>",
                                       content_type="text/html")
    return HttpResponseServerError(body, content_type="text/html")
