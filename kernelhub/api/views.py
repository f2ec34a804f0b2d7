"""REST API v1 views: thin; reads scope by `visible_team_ids`, writes call the services."""

from __future__ import annotations

from django.db.models import Q
from django.http import HttpResponse, StreamingHttpResponse
from drf_spectacular.plumbing import build_array_type, build_basic_type
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from kernelhub.api import evaluations as evaluation_service
from kernelhub.api import filters, serializers as s
from kernelhub.api.base import ApiViewMixin, IgnoreAcceptHeader
from kernelhub.api.exports import export_response
from kernelhub.api.flat import ENTITY_SETS
from kernelhub.api.kernel_export import bundle_bytes, module_filename, module_source
from kernelhub.api.models import Evaluation
from kernelhub.api.odata.filter import ODataQueryError
from kernelhub.api.odata.options import EXPORT_SUPPORTED, read_options
from kernelhub.api.pagination import IdCursorPagination, NameCursorPagination
from kernelhub.api.scoping import (
    acting_user, request_api_key, require_role, team_for_write, visible_team_ids,
)
from kernelhub.api.trajectories import trajectory_lines
from kernelhub.optimization import services as optimization_services
from kernelhub.optimization.models import Candidate, HardwareTarget, Problem, SearchSession
from kernelhub.review import services as review_services
from kernelhub.review.models import Review
from kernelhub.teams.models import Membership, Team
from search_engine.problems import ProblemError, validate_problem_source


def download(body: bytes | str, content_type: str, filename: str) -> HttpResponse:
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


class ScopedViewSet(ApiViewMixin, viewsets.GenericViewSet):
    pagination_class = IdCursorPagination

    def team_ids(self) -> list[int]:
        return visible_team_ids(self.request)


# --- teams and hardware -------------------------------------------------------------------

class TeamViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """Your teams (an API key sees its own team only)."""

    serializer_class = s.TeamSerializer
    pagination_class = NameCursorPagination

    def get_queryset(self):
        return Team.objects.filter(pk__in=self.team_ids())

    def get_serializer_context(self):
        context = super().get_serializer_context()
        api_key = request_api_key(self.request)
        if api_key is not None:
            context["roles"] = {api_key.team_id: f"api-key:{api_key.scope}"}
        elif self.request.user.is_authenticated:
            context["roles"] = dict(Membership.objects.filter(user=self.request.user)
                                    .values_list("team_id", "role"))
        return context


class HardwareTargetViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """Hardware targets and their ceilings (shared by all teams)."""

    serializer_class = s.HardwareTargetSerializer
    queryset = HardwareTarget.objects.all()
    pagination_class = NameCursorPagination
    lookup_field = "name"
    lookup_value_regex = "[A-Za-z0-9_-]+"


# --- problems and sessions -----------------------------------------------------------------

class ProblemViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin,
                     ScopedViewSet):
    """Library problems and your team's problems; engineers and admins upload new ones."""

    serializer_class = s.ProblemSerializer
    filterset_class = filters.ProblemFilter

    def get_queryset(self):
        return Problem.objects.filter(Q(team__isnull=True) | Q(team_id__in=self.team_ids()))

    @extend_schema(request=s.ProblemCreateSerializer, responses={201: s.ProblemSerializer})
    def create(self, request, *args, **kwargs):
        data = s.ProblemCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        team = team_for_write(request, values.get("team"), "upload")
        problem = optimization_services.problem_create(
            name=values["name"], source=values["source"], team=team, user=acting_user(request),
            family=values["family"], description=values["description"])
        return Response(s.ProblemSerializer(problem).data, status=status.HTTP_201_CREATED)


class SessionViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin,
                     ScopedViewSet):
    """Search sessions: launch, watch, pause, resume, cancel; export trajectories."""

    serializer_class = s.SessionSerializer
    filterset_class = filters.SessionFilter

    def get_queryset(self):
        return SearchSession.objects.filter(team_id__in=self.team_ids()).select_related(
            "problem", "hardware", "created_by")

    @extend_schema(request=s.SessionCreateSerializer, responses={201: s.SessionSerializer})
    def create(self, request, *args, **kwargs):
        data = s.SessionCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        team = team_for_write(request, values.get("team"), "launch")
        problem = Problem.objects.filter(Q(team__isnull=True) | Q(team=team),
                                         pk=values["problem"]).first()
        if problem is None:
            raise ValidationError({"problem": "No such problem in the library or your team."})
        hardware = HardwareTarget.objects.filter(name=values["hardware"]).first()
        if hardware is None:
            raise ValidationError({"hardware": f"Unknown hardware target {values['hardware']!r}."})
        session = optimization_services.session_launch(
            user=acting_user(request), team=team, problem=problem, hardware=hardware,
            start=values["start"], strategy=values["strategy"],
            synthesizer=values["synthesizer"], budget_evaluations=values["budget_evaluations"],
            budget_minutes=values["budget_minutes"], budget_cost_usd=values["budget_cost_usd"],
            precision_policy=values["precision_policy"], seed=values["seed"],
            config=data.session_config())
        return Response(s.SessionSerializer(session).data, status=status.HTTP_201_CREATED)

    def _control(self, request, service):
        session = self.get_object()
        user = require_role(request, session.team, "launch")
        session = service(session, user)
        return Response(s.SessionSerializer(session).data)

    @extend_schema(request=None, responses={200: s.SessionSerializer})
    @action(detail=True, methods=["post"])
    def pause(self, request, pk=None):
        return self._control(request, optimization_services.session_pause)

    @extend_schema(request=None, responses={200: s.SessionSerializer})
    @action(detail=True, methods=["post"])
    def resume(self, request, pk=None):
        return self._control(request, optimization_services.session_resume)

    @extend_schema(request=None, responses={200: s.SessionSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        return self._control(request, optimization_services.session_cancel)

    @extend_schema(
        parameters=[OpenApiParameter("gamma", float, description="discount for returns "
                                     "(default 0.5, as in the search)")],
        responses={(200, "application/x-ndjson"): OpenApiResponse(
            OpenApiTypes.STR, description="JSON Lines, one record per root-to-leaf chain")})
    @action(detail=True, methods=["get"], content_negotiation_class=IgnoreAcceptHeader,
            filter_backends=[], pagination_class=None)
    def trajectories(self, request, pk=None):
        session = self.get_object()
        query = s.TrajectoryQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        gamma = query.validated_data.get("gamma")
        lines = trajectory_lines(session, **({"gamma": gamma} if gamma is not None else {}))
        response = StreamingHttpResponse(lines, content_type="application/x-ndjson")
        response["Content-Disposition"] = (
            f'attachment; filename="kernelhub-session-{session.pk}-trajectories.jsonl"')
        return response


class CandidateViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """Evaluated nodes; filter by session, status, speedup, coverage, integrity."""

    serializer_class = s.CandidateSerializer
    filterset_class = filters.CandidateFilter

    def get_queryset(self):
        return Candidate.objects.filter(session__team_id__in=self.team_ids())


# --- reviews and approved kernels ---------------------------------------------------------

class ReviewViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin,
                    ScopedViewSet):
    """Propose kernels, and approve or reject them with the same rules as the UI."""

    serializer_class = s.ReviewSerializer
    filterset_class = filters.ReviewFilter

    def get_queryset(self):
        return Review.objects.filter(team_id__in=self.team_ids()).select_related(
            "candidate", "candidate__session", "candidate__session__problem", "hardware",
            "reviewer", "proposed_by", "team")

    @extend_schema(request=s.ReviewProposeSerializer, responses={201: s.ReviewSerializer})
    def create(self, request, *args, **kwargs):
        data = s.ReviewProposeSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        candidate = Candidate.objects.filter(
            session__team_id__in=self.team_ids(), pk=data.validated_data["candidate"]
        ).select_related("session", "session__team", "session__hardware").first()
        if candidate is None:
            raise ValidationError({"candidate": "No such candidate in your team."})
        user = require_role(request, candidate.session.team, "propose")
        review = review_services.kernel_propose(candidate=candidate, user=user)
        return Response(s.ReviewSerializer(review).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=s.ReviewDecisionSerializer, responses={200: s.ReviewSerializer})
    @action(detail=True, methods=["post"])
    def approve(self, request, pk=None):
        review, values, reviewer = self._decision(request)
        review = review_services.kernel_approve(
            review=review, reviewer=reviewer, comment=values["comment"],
            override_reason=values["override_reason"])
        return Response(s.ReviewSerializer(review).data)

    @extend_schema(request=s.ReviewDecisionSerializer, responses={200: s.ReviewSerializer})
    @action(detail=True, methods=["post"])
    def reject(self, request, pk=None):
        review, values, reviewer = self._decision(request)
        review = review_services.kernel_reject(review=review, reviewer=reviewer,
                                               comment=values["comment"])
        return Response(s.ReviewSerializer(review).data)

    def _decision(self, request):
        review = self.get_object()
        data = s.ReviewDecisionSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        reviewer = require_role(request, review.team, "review")
        return review, data.validated_data, reviewer


class KernelViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """Approved kernels, downloadable as a Python module or a ZIP with a check script."""

    serializer_class = s.KernelSerializer
    filterset_class = filters.KernelFilter
    throttle_scope = "api"

    def get_queryset(self):
        return Review.objects.filter(
            team_id__in=self.team_ids(), status=Review.Status.APPROVED
        ).select_related("candidate", "candidate__session", "candidate__session__problem",
                         "hardware", "reviewer", "proposed_by", "team")

    @extend_schema(responses={(200, "text/x-python"): OpenApiResponse(OpenApiTypes.STR)})
    @action(detail=True, methods=["get"], content_negotiation_class=IgnoreAcceptHeader,
            filter_backends=[], pagination_class=None)
    def module(self, request, pk=None):
        review = self.get_object()
        return download(module_source(review), "text/x-python; charset=utf-8",
                        module_filename(review))

    @extend_schema(responses={(200, "application/zip"): OpenApiResponse(OpenApiTypes.BINARY)})
    @action(detail=True, methods=["get"], content_negotiation_class=IgnoreAcceptHeader,
            filter_backends=[], pagination_class=None)
    def bundle(self, request, pk=None):
        review = self.get_object()
        return download(bundle_bytes(review), "application/zip",
                        f"kernelhub-kernel-{review.pk}.zip")


# --- reward service -----------------------------------------------------------------------

class EvaluationViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin,
                        mixins.CreateModelMixin, ScopedViewSet):
    """Reward service: submit candidates (one or a batch); read back the CLI's result object."""

    serializer_class = s.EvaluationSerializer
    filterset_class = filters.EvaluationFilter

    @property
    def throttle_scope(self):
        return "evaluations" if getattr(self, "action", None) == "create" else "api"

    def get_queryset(self):
        return Evaluation.objects.filter(team_id__in=self.team_ids()).select_related("team")

    def retrieve(self, request, *args, **kwargs):
        evaluation = evaluation_service.evaluation_refresh(self.get_object())
        return Response(self.get_serializer(evaluation).data)

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        rows = [evaluation_service.evaluation_refresh(e) for e in page]
        return self.get_paginated_response(self.get_serializer(rows, many=True).data)

    @extend_schema(
        request=s.EvaluationSubmitSerializer,
        parameters=[OpenApiParameter("team", int, description="browser sessions in several "
                                     "teams: which team submits")],
        responses={202: s.EvaluationSerializer, (202, "application/json; batch"):
                   s.EvaluationBatchResponseSerializer})
    def create(self, request, *args, **kwargs):
        data = s.EvaluationSubmitSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        api_key = request_api_key(request)
        if api_key is not None:
            team, user = api_key.team, None
        else:
            team_param = request.query_params.get("team")
            if team_param is not None and not team_param.isdigit():
                raise ValidationError({"team": "A team id is a number."})
            team = team_for_write(request, int(team_param) if team_param else None, "launch")
            user = request.user
        items = [self._item(team, item) for item in data.validated_data["items"]]
        rows = evaluation_service.evaluation_submit(
            team=team, items=items, api_key=api_key, user=user,
            batch=data.validated_data["batch"])
        if not data.validated_data["batch"]:
            return Response(s.EvaluationSerializer(rows[0]).data, status=status.HTTP_202_ACCEPTED)
        return Response({"batch_id": str(rows[0].batch_id),
                         "evaluations": s.EvaluationSerializer(rows, many=True).data},
                        status=status.HTTP_202_ACCEPTED)

    @staticmethod
    def _item(team, item: dict) -> dict:
        item = dict(item)
        if "problem" in item:
            problem = Problem.objects.filter(Q(team__isnull=True) | Q(team=team),
                                             pk=item["problem"]).first()
            if problem is None:
                raise ValidationError({"problem": f"No problem {item['problem']} in the library "
                                                  "or your team."})
            item.update(problem=problem, problem_source=problem.source, problem_name=problem.name)
        else:
            try:
                validate_problem_source(item["problem_source"])
            except ProblemError as exc:
                raise ValidationError({"problem_source": str(exc)}) from exc
            item.update(problem=None, problem_name="")
        try:
            item["target"] = evaluation_service.resolve_target(item["target"])
        except ValueError as exc:
            raise ValidationError({"target": str(exc)}) from exc
        return item


# --- flat exports ---------------------------------------------------------------------------

class ExportView(ApiViewMixin, APIView):
    """Streamed CSV (UTF-8 with BOM) or JSON export of kernels, sessions, candidates or
    evaluations; `$select`, `$filter` and `$orderby` work as in the OData feed."""

    throttle_scope = "exports"
    content_negotiation_class = IgnoreAcceptHeader

    @extend_schema(
        parameters=[
            OpenApiParameter("entity_set", str, OpenApiParameter.PATH, enum=list(ENTITY_SETS)),
            OpenApiParameter("fmt", str, OpenApiParameter.PATH, enum=["csv", "json"]),
            OpenApiParameter("$select", str, description="comma-separated columns"),
            OpenApiParameter("$filter", str, description="OData filter, e.g. status eq 'correct'"),
            OpenApiParameter("$orderby", str, description="e.g. speedup_vs_eager desc"),
        ],
        responses={(200, "text/csv"): OpenApiResponse(OpenApiTypes.STR),
                   (200, "application/json"): OpenApiResponse(
                       build_array_type(build_basic_type(OpenApiTypes.OBJECT))),
                   400: OpenApiResponse(description="malformed query option")})
    def get(self, request, entity_set: str, fmt: str):
        entity = ENTITY_SETS.get(entity_set)
        if entity is None or fmt not in ("csv", "json"):
            raise NotFound(f"Export sets: {', '.join(ENTITY_SETS)}; formats: csv, json.")
        try:
            options = read_options(request.query_params, entity, visible_team_ids(request),
                                   supported=EXPORT_SUPPORTED)
        except ODataQueryError as exc:
            raise ValidationError({"detail": str(exc)}) from exc
        return export_response(entity, options.queryset, options.select, fmt)
