from django.urls import path

from kernelhub.teams import views

app_name = "teams"

urlpatterns = [
    path("", views.team_list, name="team_list"),
    path("<slug:slug>/api-keys/", views.api_keys, name="api_keys"),
    path("<slug:slug>/members/", views.members, name="members"),
    path("<slug:slug>/members/<int:pk>/remove/", views.member_remove, name="member_remove"),
    path("<slug:slug>/api-keys/<int:pk>/revoke/", views.api_key_revoke_view,
         name="api_key_revoke"),
]
