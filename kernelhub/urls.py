from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from kernelhub import views

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("healthz", views.healthz, name="healthz"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
]

# Apps that add pages register them here as they arrive.
OPTIONAL_APP_URLS = [
    ("sessions/", "kernelhub.optimization.urls", "optimization"),
    ("review/", "kernelhub.review.urls", "review"),
    ("knowledge/", "knowledge.urls", "knowledge"),
    ("", "kernelhub.api.urls", "api"),
]
for prefix, module, namespace in OPTIONAL_APP_URLS:
    try:
        urlpatterns.append(path(prefix, include((module, namespace), namespace=namespace)))
    except ModuleNotFoundError as exc:
        if not module.startswith(exc.name or "?"):
            raise

if settings.DEBUG:
    from django.contrib.staticfiles.urls import staticfiles_urlpatterns

    urlpatterns += staticfiles_urlpatterns()
