"""Knowledge base over the API: documents (read), hybrid search, and distilled skills.

Manuals and skills are shared by the whole installation (see knowledge.models); reading
them still needs a team member or an API key. Fields that would name other teams'
sessions or users are not exposed."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from kernelhub.api import serializers as s
from kernelhub.api.base import ApiViewMixin
from kernelhub.api.views import ScopedViewSet

MAX_K = 50


class SearchQuerySerializer(serializers.Serializer):
    q = serializers.CharField(max_length=2000)
    hardware = serializers.CharField(max_length=64, required=False)
    category = serializers.ListField(child=serializers.CharField(max_length=64), required=False)
    k = serializers.IntegerField(min_value=1, max_value=MAX_K, default=5)


class DocumentViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    serializer_class = s.DocumentSerializer

    def get_queryset(self):
        from knowledge.models import Document

        return Document.objects.all()


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
        return skill_list(query=params.get("q", "")[:500],
                          include_retired=params.get("include_retired") == "true",
                          hardware=params.get("hardware", "")[:64])


class KnowledgeSearchView(ApiViewMixin, APIView):
    """Hybrid (vector + BM25) search over the manuals, filtered by hardware and category."""

    @extend_schema(parameters=[SearchQuerySerializer],
                   responses={200: s.PassageSerializer(many=True)})
    def get(self, request):
        from knowledge.errors import KnowledgeInputError
        from knowledge.retrieval import retrieve

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
            passages = retrieve(values["q"], hardware=values.get("hardware"),
                                categories=values.get("category") or None, k=values["k"])
        except KnowledgeInputError as exc:
            raise ValidationError({"detail": str(exc)}) from exc
        return Response([p.to_dict() for p in passages])
