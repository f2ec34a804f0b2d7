from django.urls import path

from kernelhub.optimization import candidate_views, views

app_name = "optimization"

urlpatterns = [
    path("", views.session_list, name="session_list"),
    path("new/", views.session_new, name="session_new"),
    path("coverage/", views.problem_coverage, name="problem_coverage"),
    path("<int:pk>/", views.session_detail, name="session_detail"),
    path("<int:pk>/events/", views.session_events, name="session_events"),
    path("compare/", candidate_views.candidate_compare, name="candidate_compare"),
    path("<int:pk>/candidates/", candidate_views.candidate_list, name="candidate_list"),
    path("<int:pk>/controls/", views.session_controls, name="session_controls"),
    path("<int:pk>/<str:action>/", views.session_control, name="session_control"),
    path("candidates/<int:pk>/", views.candidate_detail, name="candidate_detail"),
    path("candidates/<int:pk>/diagnostics.json", views.candidate_diagnostics,
         name="candidate_diagnostics"),
    path("candidates/<int:pk>/download/", candidate_views.candidate_download,
         name="candidate_download"),
    path("candidates/<int:pk>/propose/", views.candidate_propose, name="candidate_propose"),
]
