from django.urls import path

from knowledge import views

app_name = "knowledge"

urlpatterns = [
    path("", views.document_list, name="document_list"),
    path("upload/", views.document_upload, name="document_upload"),
    path("documents/<int:pk>/", views.document_detail, name="document_detail"),
    path("documents/<int:pk>/progress/", views.document_progress, name="document_progress"),
    path("documents/<int:pk>/delete/", views.document_delete, name="document_delete"),
    path("documents/<int:pk>/cancel/", views.document_cancel, name="document_cancel"),
    path("documents/<int:pk>/share/", views.document_share, name="document_share"),
    path("search/", views.search, name="search"),
    path("skills/", views.skill_list, name="skill_list"),
    path("skills/<int:pk>/", views.skill_detail, name="skill_detail"),
    path("skills/<int:pk>/retire/", views.skill_retire, name="skill_retire"),
    path("skills/<int:pk>/share/", views.skill_share, name="skill_share"),
]
