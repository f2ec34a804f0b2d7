"""Routes of the public API (namespace "api"): /api/v1/..., /api/schema/, /api/docs/, /odata/."""

from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.routers import SimpleRouter

from kernelhub.api import knowledge_views, views
from kernelhub.api.odata import views as odata

router = SimpleRouter()
router.trailing_slash = "/?"  # /api/v1/evaluations and /api/v1/evaluations/ both work
router.register("teams", views.TeamViewSet, basename="team")
router.register("hardware", views.HardwareTargetViewSet, basename="hardware")
router.register("problems", views.ProblemViewSet, basename="problem")
router.register("sessions", views.SessionViewSet, basename="session")
router.register("candidates", views.CandidateViewSet, basename="candidate")
router.register("reviews", views.ReviewViewSet, basename="review")
router.register("kernels", views.KernelViewSet, basename="kernel")
router.register("evaluations", views.EvaluationViewSet, basename="evaluation")
router.register("knowledge/documents", knowledge_views.DocumentViewSet, basename="document")
router.register("skills", knowledge_views.SkillViewSet, basename="skill")

urlpatterns = [
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api:schema"), name="docs"),
    path("api/v1/knowledge/search", knowledge_views.KnowledgeSearchView.as_view(),
         name="knowledge-search"),
    re_path(r"^api/v1/exports/(?P<entity_set>[a-z]+)\.(?P<fmt>csv|json)$",
            views.ExportView.as_view(), name="export"),
    path("api/v1/", include(router.urls)),
    path("odata", odata.ServiceDocumentView.as_view()),
    path("odata/", odata.ServiceDocumentView.as_view(), name="odata-service"),
    path("odata/$metadata", odata.MetadataView.as_view(), name="odata-metadata"),
    path("odata/<str:entity_set>/$count", odata.EntitySetView.as_view(),
         {"count_segment": True}, name="odata-count"),
    path("odata/<str:entity_set>", odata.EntitySetView.as_view(), name="odata-entity-set"),
]
