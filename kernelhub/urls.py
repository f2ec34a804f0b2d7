from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from kernelhub import views
from kernelhub.optimization import views as optimization_views

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("healthz", views.healthz, name="healthz"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("problems/", optimization_views.problem_list, name="problem_list"),
    path("problems/<int:pk>/", optimization_views.problem_detail, name="problem_detail"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("sessions/", include(("kernelhub.optimization.urls", "optimization"))),
    path("review/", include(("kernelhub.review.urls", "review"))),
    path("teams/", include(("kernelhub.teams.urls", "teams"))),
    path("knowledge/", include(("knowledge.urls", "knowledge"))),
    path("", include(("kernelhub.api.urls", "api"))),
]

# Styled error pages (JSON under /api/ and /odata/); Django uses them whenever DEBUG is off.
handler400 = "kernelhub.views.error_400"
handler403 = "kernelhub.views.error_403"
handler404 = "kernelhub.views.error_404"
handler500 = "kernelhub.views.error_500"

if settings.DEBUG:
    from django.contrib.staticfiles.urls import staticfiles_urlpatterns

    urlpatterns += staticfiles_urlpatterns()
