from django.urls import path

from kernelhub.review import views

app_name = "review"

urlpatterns = [
    path("", views.queue, name="queue"),
    path("<int:pk>/", views.detail, name="detail"),
    path("<int:pk>/decide/", views.decide, name="decide"),
    path("approved/", views.approved, name="approved"),
    path("audit/", views.audit, name="audit"),
]
