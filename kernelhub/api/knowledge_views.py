"""Knowledge base over the API: documents (read, delete), hybrid search, and distilled skills.

Each team reads its own documents and skills plus the ones an admin shared with every
team (knowledge.selectors.KnowledgeScope); an API key reads its own team's. Another
team's rows are not found (404). Fields that would name other teams' sessions or users
are not exposed."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from kernelhub.api import serializers as s
from kernelhub.api.base import ApiViewMixin
from kernelhub.api.scoping import acting_user, request_api_key, require_role, visible_team_ids
from kernelhub.api.views import ScopedViewSet

MAX_K = 50


def knowledge_scope(request):
    """What the caller may read: their teams' rows and shared ones (a key: its team's);
    signed-in staff also see rows no team owns yet."""
    from knowledge.selectors import KnowledgeScope

    user = request.user
    staff = request_api_key(request) is None and bool(user.is_staff or user.is_superuser)
    return KnowledgeScope.for_teams(visible_team_ids(request), unassigned=staff)


class SearchQuerySerializer(serializers.Serializer):
    q = serializers.CharField(max_length=2000)
    hardware = serializers.CharField(max_length=64, required=False)
    category = serializers.ListField(child=serializers.CharField(max_length=64), required=False)
    k = serializers.IntegerField(min_value=1, max_value=MAX_K, default=5)


class DocumentViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin,
                      mixins.DestroyModelMixin, ScopedViewSet):
    """Documents your teams may read. DELETE removes one of your team's documents (an
    engineer or admin; a key acts for its creator) with its vectors; it is audited."""

    serializer_class = s.DocumentSerializer

    def get_queryset(self):
        from knowledge.selectors import document_list

        return document_list(scope=knowledge_scope(self.request))

    def perform_destroy(self, instance):
        from knowledge.errors import KnowledgeInputError
        from knowledge.services import document_delete

        if instance.team is not None:
            user = require_role(self.request, instance.team, "upload")
        else:
            user = acting_user(self.request)
        try:
            document_delete(instance, user=user)
        except KnowledgeInputError as exc:
            raise ValidationError({"detail": str(exc)}) from exc
        except DjangoPermissionDenied as exc:
            raise PermissionDenied(str(exc)) from exc


class SkillViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    serializer_class = s.SkillSerializer

    @extend_schema(parameters=[
        OpenApiParameter("q", str, description="words to match"),
        OpenApiParameter("hardware", str), OpenApiParameter("include_retired", bool)])
    def list(self, request, *args, **kwargs):
        return super().list(request, *args, **kwargs)

    def get_queryset(self):
        from knowledge.selectors import skill_list

        params = self.request.query_params
        return skill_list(scope=knowledge_scope(self.request), query=params.get("q", "")[:500],
                          include_retired=params.get("include_retired") == "true",
                          hardware=params.get("hardware", "")[:64])


class KnowledgeSearchView(ApiViewMixin, APIView):
    """Hybrid (vector + BM25) search over the manuals, filtered by hardware and category."""

    @extend_schema(parameters=[SearchQuerySerializer],
                   responses={200: s.PassageSerializer(many=True)})
    def get(self, request):
        from knowledge.errors import KnowledgeInputError
        from knowledge.selectors import passage_search

        query = SearchQuerySerializer(data={
            **request.query_params.dict(), "category": request.query_params.getlist("category")})
        query.is_valid(raise_exception=True)
        values = query.validated_data
        from knowledge.models import Chunk, Category

        unknown = [c for c in values.get("category") or [] if c not in Category.values]
        if unknown:
            raise ValidationError({"category": f"Unknown category {', '.join(unknown)}; use one "
                                               f"of {', '.join(Category.values)}."})
        if not Chunk.objects.exists():  # nothing indexed yet: no need to load the model
            return Response([])
        try:
            passages = passage_search(scope=knowledge_scope(request), query=values["q"],
                                      hardware=values.get("hardware"),
                                      categories=values.get("category") or None, k=values["k"])
        except KnowledgeInputError as exc:
            raise ValidationError({"detail": str(exc)}) from exc
        return Response([p.to_dict() for p in passages])
