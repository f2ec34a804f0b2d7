"""The filters and sortable columns of the pages' lists (sessions, a session's candidates,
problems); kernelhub.listing does the filtering, sorting and paging."""

from __future__ import annotations

import django_filters as df
from django.db.models import Q

from kernelhub.listing import ListSpec
from kernelhub.optimization.models import Candidate, HardwareTarget, SearchSession

CANDIDATE_STATUSES = [(s, s.replace("_", " ")) for s in (
    "correct", "incorrect", "compile_error", "runtime_error", "timeout", "hack_suspected",
    "rejected_lazy", "pending", "cancelled")]


class SessionListFilter(df.FilterSet):
    q = df.CharFilter(method="search", label="Problem or id")
    status = df.ChoiceFilter(choices=SearchSession.Status.choices, empty_label="any status")
    hardware = df.ModelChoiceFilter(queryset=HardwareTarget.objects.all(),
                                    empty_label="any hardware")
    strategy = df.ChoiceFilter(choices=SearchSession.Strategy.choices,
                               empty_label="any strategy")

    def search(self, queryset, name, value):
        query = Q(problem__name__icontains=value.strip())
        if value.strip().isdigit():
            query |= Q(pk=int(value))
        return queryset.filter(query)


class CandidateListFilter(df.FilterSet):
    status = df.ChoiceFilter(choices=CANDIDATE_STATUSES, empty_label="any status")
    transformation = df.CharFilter(field_name="origin__transformation",
                                   lookup_expr="icontains", label="Transformation")
    min_speedup = df.NumberFilter(field_name="speedup_vs_eager", lookup_expr="gte",
                                  label="× eager at least", min_value=0, max_value=1e9)


class ProblemListFilter(df.FilterSet):
    q = df.CharFilter(field_name="name", lookup_expr="icontains", label="Name")
    family = df.CharFilter(field_name="family", lookup_expr="icontains", label="Family")


SESSIONS = ListSpec(SessionListFilter, {
    "id": "pk", "problem": "problem__name", "hardware": "hardware__name",
    "strategy": "strategy", "status": "status", "evaluated": "evaluated_count",
    "eager": "best_speedup_vs_eager", "compile": "best_speedup_vs_compile",
    "created": "created_at"}, "-id")
CANDIDATES = ListSpec(CandidateListFilter, {
    "id": "pk", "depth": "depth", "status": "status", "eager": "speedup_vs_eager",
    "compile": "speedup_vs_compile", "reward": "reward", "coverage": "coverage",
    "evaluated": "evaluated_at"}, "-eager", per_page=50)
PROBLEMS = ListSpec(ProblemListFilter, {
    "name": "name", "family": "family", "sessions": "session_count",
    "eager": "best_vs_eager", "compile": "best_vs_compile"}, "name")
