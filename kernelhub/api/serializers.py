"""Serializers of the REST API. Reads are plain ModelSerializers; writes validate input
and hand it to the services (which hold the rules shared with the UI)."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from kernelhub.api.evaluations import MAX_BATCH, MAX_SOURCE_BYTES, evaluation_result
from kernelhub.api.models import Evaluation
from kernelhub.optimization.models import (
    Budget,
    Candidate,
    HardwareTarget,
    Problem,
    Screening,
    SearchSession,
)
from kernelhub.optimization.services import PRECISION_POLICIES
from kernelhub.optimization.session_state import STATES, SessionState, session_state
from kernelhub.review.models import Review
from kernelhub.teams.models import Team


def username(user) -> str | None:
    return user.get_username() if user is not None else None


class TeamSerializer(serializers.ModelSerializer):
    role = serializers.SerializerMethodField(help_text="Your role, or the API key's scope.")

    class Meta:
        model = Team
        fields = ["id", "name", "slug", "created_at", "role"]

    def get_role(self, team: Team) -> str:
        return self.context.get("roles", {}).get(team.pk, "")


class HardwareTargetSerializer(serializers.ModelSerializer):
    class Meta:
        model = HardwareTarget
        fields = ["id", "name", "display_name", "vendor", "architecture", "memory_bandwidth_gbs",
                  "fp32_tflops", "bf16_tflops", "multiprocessors", "l2_bytes",
                  "shared_memory_per_block_bytes", "ceilings_source", "notes"]


class ProblemSerializer(serializers.ModelSerializer):
    team = serializers.PrimaryKeyRelatedField(read_only=True, allow_null=True,
                                              help_text="null for library problems")

    class Meta:
        model = Problem
        fields = ["id", "name", "family", "description", "dtype", "team", "source",
                  "source_sha256", "created_at"]


class ProblemCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    source = serializers.CharField(max_length=MAX_SOURCE_BYTES, trim_whitespace=False)
    family = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")
    description = serializers.CharField(required=False, allow_blank=True, default="")
    team = serializers.IntegerField(required=False,
                                    help_text="needed when you are in several teams")


class SessionSerializer(serializers.ModelSerializer):
    problem_name = serializers.CharField(source="problem.name", read_only=True)
    hardware = serializers.SlugRelatedField(slug_field="name", read_only=True)
    created_by = serializers.SerializerMethodField()
    state = serializers.SerializerMethodField(help_text=(
        "Why the session is (not) moving, as the session page shows it: queued_for_loop "
        "(its loop waits for a search worker's slot), waiting_for_worker (no live worker "
        "serves the queue in waiting_on_queue), checking_problem (its loop checks whether "
        "the offline synthesizer covers the problem before searching), paused_llm_outage, "
        "paused, running, "
        "finished, failed, cancelled."))
    state_label = serializers.SerializerMethodField(help_text="`state` in words.")
    state_detail = serializers.SerializerMethodField(
        help_text="Why, and what to do: the session page's banner (for an ended session, the "
                  "reason it ended).")
    waiting_on_queue = serializers.SerializerMethodField(
        help_text='The queue it waits on ("search", "gpu.<target>"); "" when not waiting.')
    screen = serializers.SerializerMethodField(
        help_text="Configurations screened per expansion as launched; null: the target's "
                  "default.")
    screen_finalists = serializers.SerializerMethodField(
        help_text="Screened configurations fully evaluated per expansion; null: the default.")

    class Meta:
        model = SearchSession
        fields = ["id", "team", "problem", "problem_name", "hardware", "strategy", "synthesizer",
                  "precision_policy", "budget_evaluations", "budget_minutes", "budget_cost_usd",
                  "seed", "status", "status_message", "evaluated_count", "screened_count",
                  "best_candidate",
                  "best_speedup_vs_eager", "best_speedup_vs_compile", "llm_cost_usd",
                  "created_by", "created_at", "started_at", "finished_at",
                  "state", "state_label", "state_detail", "waiting_on_queue",
                  "screen", "screen_finalists"]

    def get_created_by(self, session) -> str | None:
        return username(session.created_by)

    def get_screen(self, session) -> int | None:
        return (session.config or {}).get("screen")

    def get_screen_finalists(self, session) -> int | None:
        return (session.config or {}).get("screen_finalists")

    def _state(self, session) -> SessionState:
        known = self.context.setdefault("_session_states", {})
        if session.pk not in known:
            known[session.pk] = session_state(session)
        return known[session.pk]

    @extend_schema_field(serializers.ChoiceField(choices=STATES))
    def get_state(self, session) -> str:
        return self._state(session).state

    def get_state_label(self, session) -> str:
        return self._state(session).label

    def get_state_detail(self, session) -> str:
        return self._state(session).detail

    def get_waiting_on_queue(self, session) -> str:
        return self._state(session).queue


class SessionCreateSerializer(serializers.Serializer):
    team = serializers.IntegerField(required=False,
                                    help_text="needed when you are in several teams")
    problem = serializers.IntegerField(help_text="problem id (library or your team's)")
    hardware = serializers.CharField(max_length=32, help_text="hardware target name, e.g. h200")
    strategy = serializers.ChoiceField(SearchSession.Strategy.values,
                                       default=SearchSession.Strategy.MCTS)
    synthesizer = serializers.ChoiceField(SearchSession.SynthesizerKind.values,
                                          default=SearchSession.SynthesizerKind.OFFLINE)
    precision_policy = serializers.ChoiceField(PRECISION_POLICIES, default="strict")
    budget_evaluations = serializers.IntegerField(
        min_value=Budget.EVALUATIONS[0], max_value=Budget.EVALUATIONS[1],
        default=Budget.DEFAULT_EVALUATIONS)
    budget_minutes = serializers.FloatField(min_value=Budget.MINUTES[0],
                                            max_value=Budget.MINUTES[1],
                                            default=Budget.DEFAULT_MINUTES)
    budget_cost_usd = serializers.FloatField(min_value=Budget.COST_USD[0],
                                             max_value=Budget.COST_USD[1], default=0.0)
    seed = serializers.IntegerField(min_value=-(2**31), max_value=2**31 - 1, default=0)
    start = serializers.BooleanField(default=True, help_text="start it right away")
    screen = serializers.IntegerField(
        min_value=Screening.CONFIGURATIONS[0], max_value=Screening.CONFIGURATIONS[1],
        required=False, allow_null=True,
        help_text="configurations of a program screened per expansion before the finalists "
                  "get the full evaluation; absent or null: the target's default (off on the "
                  "interpreter), 0: off")
    screen_finalists = serializers.IntegerField(
        min_value=Screening.FINALISTS[0], max_value=Screening.FINALISTS[1], required=False,
        allow_null=True, help_text="screened configurations that get the full evaluation")

    def validate(self, attrs):
        screen, finalists = attrs.get("screen"), attrs.get("screen_finalists")
        if screen and finalists and finalists > screen:
            raise serializers.ValidationError({"screen_finalists": (
                f"Finalists per expansion ({finalists}) cannot exceed the configurations "
                f"screened ({screen}).")})
        return attrs

    def session_config(self) -> dict:
        """What goes into `session.config`: the screening asked for, nothing else."""
        return {key: self.validated_data[key] for key in ("screen", "screen_finalists")
                if self.validated_data.get(key) is not None}


class CandidateSerializer(serializers.ModelSerializer):
    parent = serializers.PrimaryKeyRelatedField(read_only=True, allow_null=True)
    tainted = serializers.BooleanField(source="is_tainted", read_only=True)

    class Meta:
        model = Candidate
        fields = ["id", "session", "node_id", "parent", "depth", "status", "message", "reward",
                  "advantage", "speedup_vs_eager", "speedup_vs_compile", "coverage", "timing",
                  "diagnostics", "integrity_flags", "tainted", "origin", "source",
                  "created_at", "evaluated_at"]


class ReviewSerializer(serializers.ModelSerializer):
    session = serializers.IntegerField(source="candidate.session_id", read_only=True)
    problem = serializers.CharField(source="candidate.session.problem.name", read_only=True)
    hardware = serializers.SlugRelatedField(slug_field="name", read_only=True)
    proposed_by = serializers.SerializerMethodField()
    reviewer = serializers.SerializerMethodField()

    class Meta:
        model = Review
        fields = ["id", "team", "candidate", "session", "problem", "hardware", "status",
                  "proposed_by", "proposed_at", "reviewer", "decided_at", "comment", "metrics",
                  "integrity_override", "override_reason"]

    def get_proposed_by(self, review) -> str | None:
        return username(review.proposed_by)

    def get_reviewer(self, review) -> str | None:
        return username(review.reviewer)


class ReviewProposeSerializer(serializers.Serializer):
    candidate = serializers.IntegerField(help_text="id of a correct candidate of your team")


class ReviewDecisionSerializer(serializers.Serializer):
    comment = serializers.CharField(required=False, allow_blank=True, default="", max_length=10_000)
    override_reason = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=10_000,
        help_text="approve only: needed to approve a kernel with integrity flags")


class KernelSerializer(ReviewSerializer):
    speedup_vs_eager = serializers.FloatField(source="candidate.speedup_vs_eager", read_only=True,
                                              allow_null=True)
    speedup_vs_compile = serializers.FloatField(source="candidate.speedup_vs_compile",
                                                read_only=True, allow_null=True)
    coverage = serializers.FloatField(source="candidate.coverage", read_only=True,
                                      allow_null=True)
    module_url = serializers.SerializerMethodField()
    bundle_url = serializers.SerializerMethodField()

    class Meta(ReviewSerializer.Meta):
        fields = ["id", "team", "candidate", "session", "problem", "hardware",
                  "speedup_vs_eager", "speedup_vs_compile", "coverage", "reviewer",
                  "decided_at", "comment", "metrics", "integrity_override", "module_url",
                  "bundle_url"]

    def _url(self, name, review) -> str:
        path = reverse(f"api:{name}", kwargs={"pk": review.pk})
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request else path

    def get_module_url(self, review) -> str:
        return self._url("kernel-module", review)

    def get_bundle_url(self, review) -> str:
        return self._url("kernel-bundle", review)


class EvaluationSerializer(serializers.ModelSerializer):
    problem = serializers.PrimaryKeyRelatedField(read_only=True, allow_null=True)
    result = serializers.SerializerMethodField(
        help_text="What `python -m search_engine evaluate --json` prints; null while pending.")

    class Meta:
        model = Evaluation
        fields = ["id", "batch_id", "state", "status", "reward", "problem", "problem_name",
                  "target", "precision_policy", "timeout_s", "submitted_at", "finished_at",
                  "result"]

    @extend_schema_field(serializers.JSONField(allow_null=True))
    def get_result(self, evaluation: Evaluation) -> dict | None:
        return evaluation_result(evaluation)


class EvaluationItemSerializer(serializers.Serializer):
    problem = serializers.IntegerField(required=False, help_text="a stored problem's id")
    problem_source = serializers.CharField(
        required=False, max_length=MAX_SOURCE_BYTES, trim_whitespace=False,
        help_text="or the problem's Python source (KernelBench format)")
    candidate_source = serializers.CharField(max_length=MAX_SOURCE_BYTES, trim_whitespace=False)
    target = serializers.CharField(max_length=32, default="auto")
    precision_policy = serializers.ChoiceField(PRECISION_POLICIES, default="strict")
    timeout_s = serializers.FloatField(min_value=1, max_value=1800, default=180.0)

    def validate(self, data):
        if ("problem" in data) == ("problem_source" in data):
            raise serializers.ValidationError("Give exactly one of 'problem' (an id) and "
                                              "'problem_source'.")
        return data


class EvaluationSubmitSerializer(serializers.Serializer):
    """One evaluation (the item's fields at the top level) or a batch (`evaluations`)."""

    evaluations = EvaluationItemSerializer(many=True, required=False, max_length=MAX_BATCH,
                                           min_length=1, help_text=f"a batch, at most {MAX_BATCH}")
    problem = serializers.IntegerField(required=False)
    problem_source = serializers.CharField(required=False, max_length=MAX_SOURCE_BYTES,
                                           trim_whitespace=False)
    candidate_source = serializers.CharField(required=False, max_length=MAX_SOURCE_BYTES,
                                             trim_whitespace=False)
    target = serializers.CharField(max_length=32, required=False)
    precision_policy = serializers.ChoiceField(PRECISION_POLICIES, required=False)
    timeout_s = serializers.FloatField(min_value=1, max_value=1800, required=False)

    def validate(self, data):
        if "evaluations" in data:
            extra = set(data) - {"evaluations"}
            if extra:
                raise serializers.ValidationError(
                    f"A batch takes only 'evaluations'; move {', '.join(sorted(extra))} into "
                    "its items.")
            return {"batch": True, "items": data["evaluations"]}
        item = EvaluationItemSerializer(data=self.initial_data)
        item.is_valid(raise_exception=True)
        return {"batch": False, "items": [item.validated_data]}


class EvaluationBatchResponseSerializer(serializers.Serializer):
    batch_id = serializers.UUIDField()
    evaluations = EvaluationSerializer(many=True)


class TrajectoryQuerySerializer(serializers.Serializer):
    gamma = serializers.FloatField(min_value=0, max_value=1, required=False)


@extend_schema_field(OpenApiTypes.OBJECT)
class AnyJSONField(serializers.JSONField):
    pass


class DocumentSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    title = serializers.CharField()
    filename = serializers.CharField()
    kind = serializers.CharField()
    vendor = serializers.CharField()
    hardware = serializers.ListField(child=serializers.CharField())
    category = serializers.CharField()
    status = serializers.CharField()
    pages = serializers.IntegerField(allow_null=True)
    chunk_count = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    indexed_at = serializers.DateTimeField(allow_null=True)
    team = serializers.IntegerField(source="team_id", allow_null=True)
    shared = serializers.BooleanField()


class PassageSerializer(serializers.Serializer):
    chunk_id = serializers.IntegerField()
    document_id = serializers.IntegerField()
    document = serializers.CharField()
    filename = serializers.CharField()
    text = serializers.CharField()
    score = serializers.FloatField()
    page = serializers.IntegerField(allow_null=True)
    section = serializers.CharField(allow_blank=True)
    vendor = serializers.CharField(allow_blank=True)
    hardware = serializers.ListField(child=serializers.CharField())
    category = serializers.CharField()


class SkillSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    title = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    transformation = serializers.CharField()
    params = AnyJSONField()
    family = serializers.CharField(allow_blank=True)
    hardware = serializers.CharField(allow_blank=True)
    bottleneck_before = serializers.CharField(allow_blank=True)
    bottleneck_after = serializers.CharField(allow_blank=True)
    speedup_mean = serializers.FloatField()
    speedup_best = serializers.FloatField()
    advantage_mean = serializers.FloatField()
    observations = serializers.IntegerField()
    shape_class = serializers.CharField(allow_blank=True)
    # its record in later sessions: uses, how many beat their parent, mean speedup ratio
    uses = serializers.IntegerField()
    helped_count = serializers.IntegerField()
    gain_mean = serializers.FloatField(allow_null=True)
    retired = serializers.BooleanField()
    retired_automatically = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    team = serializers.IntegerField(source="team_id", allow_null=True)
    shared = serializers.BooleanField()
