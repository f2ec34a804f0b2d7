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
    path("sessions/", include(("kernelhub.optimization.urls", "optimization"))),
    path("review/", include(("kernelhub.review.urls", "review"))),
    path("knowledge/", include(("knowledge.urls", "knowledge"))),
    path("", include(("kernelhub.api.urls", "api"))),
]

if settings.DEBUG:
    from django.contrib.staticfiles.urls import staticfiles_urlpatterns

    urlpatterns += staticfiles_urlpatterns()
