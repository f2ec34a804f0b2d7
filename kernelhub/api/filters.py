"""django-filter FilterSets for the list endpoints."""

from __future__ import annotations

import django_filters as df

from kernelhub.api.flat import JSONArrayLength
from kernelhub.api.models import Evaluation
from kernelhub.optimization.models import Candidate, Problem, SearchSession
from kernelhub.review.models import Review


class CharInFilter(df.BaseInFilter, df.CharFilter):
    pass


class IdFilter(df.NumberFilter):
    """An id: a positive 64-bit integer (bigger numbers are a 400, not a database error)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("min_value", 0)
        kwargs.setdefault("max_value", 2**63 - 1)
        kwargs.setdefault("decimal_places", 0)
        super().__init__(*args, **kwargs)


class BoundedNumberFilter(df.NumberFilter):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("min_value", -1e300)
        kwargs.setdefault("max_value", 1e300)
        super().__init__(*args, **kwargs)


class ProblemFilter(df.FilterSet):
    name = df.CharFilter(lookup_expr="icontains")
    family = df.CharFilter()
    library = df.BooleanFilter(field_name="team", lookup_expr="isnull",
                               help_text="true: library problems only; false: your team's")

    class Meta:
        model = Problem
        fields = ["name", "family", "library"]


class SessionFilter(df.FilterSet):
    status = CharInFilter(help_text="one or more statuses, comma-separated")
    hardware = df.CharFilter(field_name="hardware__name")
    problem = IdFilter(field_name="problem_id")
    strategy = df.ChoiceFilter(choices=SearchSession.Strategy.choices)
    team = IdFilter(field_name="team_id")

    class Meta:
        model = SearchSession
        fields = ["status", "hardware", "problem", "strategy", "team"]


class CandidateFilter(df.FilterSet):
    session = IdFilter(field_name="session_id")
    status = CharInFilter(help_text="one or more statuses, comma-separated (e.g. correct)")
    speedup_min = BoundedNumberFilter(field_name="speedup_vs_eager", lookup_expr="gte")
    speedup_max = BoundedNumberFilter(field_name="speedup_vs_eager", lookup_expr="lte")
    speedup_vs_compile_min = BoundedNumberFilter(field_name="speedup_vs_compile", lookup_expr="gte")
    coverage_min = BoundedNumberFilter(field_name="coverage", lookup_expr="gte")
    reward_min = BoundedNumberFilter(field_name="reward", lookup_expr="gte")
    integrity = df.ChoiceFilter(choices=[("clean", "no integrity flags"),
                                         ("flagged", "at least one integrity flag")],
                                method="filter_integrity")
    hardware = df.CharFilter(field_name="session__hardware__name")
    problem = IdFilter(field_name="session__problem_id")

    class Meta:
        model = Candidate
        fields = ["session", "status", "hardware", "problem"]

    def filter_integrity(self, queryset, name, value):
        queryset = queryset.alias(flag_count=JSONArrayLength("integrity_flags"))
        if value == "clean":
            return queryset.filter(flag_count=0)
        return queryset.filter(flag_count__gt=0)


class ReviewFilter(df.FilterSet):
    status = df.ChoiceFilter(choices=Review.Status.choices)
    hardware = df.CharFilter(field_name="hardware__name")
    session = IdFilter(field_name="candidate__session_id")

    class Meta:
        model = Review
        fields = ["status", "hardware", "session"]


class KernelFilter(df.FilterSet):
    hardware = df.CharFilter(field_name="hardware__name")
    problem = df.CharFilter(field_name="candidate__session__problem__name")
    family = df.CharFilter(field_name="candidate__session__problem__family")
    speedup_min = BoundedNumberFilter(field_name="candidate__speedup_vs_eager", lookup_expr="gte")

    class Meta:
        model = Review
        fields = ["hardware", "problem", "family", "speedup_min"]


class EvaluationFilter(df.FilterSet):
    state = df.ChoiceFilter(choices=Evaluation.State.choices)
    status = CharInFilter()
    batch_id = df.UUIDFilter()
    target = df.CharFilter()

    class Meta:
        model = Evaluation
        fields = ["state", "status", "batch_id", "target"]
