"""The filters and sortable columns of the approved kernels' list; kernelhub.listing does
the filtering, sorting and paging."""

from __future__ import annotations

import django_filters as df
from django.db.models import Q

from kernelhub.listing import ListSpec
from kernelhub.optimization.models import HardwareTarget


class ApprovedKernelFilter(df.FilterSet):
    q = df.CharFilter(method="search", label="Problem, kernel or session id")
    hardware = df.ModelChoiceFilter(queryset=HardwareTarget.objects.all(),
                                    empty_label="any hardware")
    min_speedup = df.NumberFilter(field_name="candidate__speedup_vs_eager", lookup_expr="gte",
                                  label="× eager at least", min_value=0, max_value=1e9)
    overridden = df.BooleanFilter(field_name="integrity_override", label="Flags overridden")

    def search(self, queryset, name, value):
        value = value.strip().lstrip("#")
        query = Q(candidate__session__problem__name__icontains=value)
        if value.isdigit():
            query |= Q(pk=int(value)) | Q(candidate__session_id=int(value))
        return queryset.filter(query)


# The frozen metrics are the candidate's numbers at approval (a candidate's result never
# changes once evaluated), so the columns sort on the candidate's indexed fields.
APPROVED_KERNELS = ListSpec(ApprovedKernelFilter, {
    "kernel": "pk", "problem": "candidate__session__problem__name",
    "hardware": "hardware__name", "eager": "candidate__speedup_vs_eager",
    "compile": "candidate__speedup_vs_compile", "reward": "candidate__reward",
    "reviewer": "reviewer__username", "approved": "decided_at"}, "-approved")
