"""Flat rows of kernels, sessions, candidates and evaluations.

One definition serves the OData feed, the CSV and JSON exports and the benchmark: each
column is a database expression (so `$filter` and `$orderby` run in SQL) with an EDM type
(so `$metadata` and the filter parser know what may be compared with what). Column order
here is the stable column order of every export.
"""

from __future__ import annotations

import datetime as dt
import math
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from django.db.models import (
    Expression,
    F,
    FloatField,
    Func,
    IntegerField,
    QuerySet,
    TextField,
    Value,
)
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.db.models.functions import Cast, Coalesce, NullIf

from kernelhub.api.models import Evaluation
from kernelhub.optimization.models import Candidate, SearchSession
from kernelhub.review.models import Review

INT, FLOAT, STR, BOOL, DATE, GUID = (
    "Edm.Int64", "Edm.Double", "Edm.String", "Edm.Boolean", "Edm.DateTimeOffset", "Edm.Guid",
)
ALIAS_PREFIX = "c_"


class JSONArrayLength(Func):
    """Length of a JSON array column (SQLite json_array_length, PostgreSQL jsonb_array_length)."""

    function = "JSON_ARRAY_LENGTH"
    output_field = IntegerField()

    def as_postgresql(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, function="JSONB_ARRAY_LENGTH", **extra)


def json_text(field_path: str, *keys: str) -> Expression:
    """The text at `keys` inside the JSON column `field_path` (which may cross relations;
    Django's KT() cannot)."""
    expr: Any = F(field_path)
    for key in keys[:-1]:
        expr = KeyTransform(key, expr)
    # Cast: a plain text expression, so lookups compare text (not JSON-encoded values).
    return Cast(KeyTextTransform(keys[-1], expr), TextField())


def json_float(field_path: str, *keys: str) -> Expression:
    """The number at `keys`, NULL where the key is missing or JSON null. (SQLite's text of a
    JSON null is 'null', which casts to 0.0: an untimed baseline exported as "0.0".)"""
    text = NullIf(NullIf(json_text(field_path, *keys), Value("null")), Value(""))
    return Cast(text, FloatField())  # text -> number on both backends


def problem_family(problem_path: str) -> Expression:
    """The problem's family, else the family the offline coverage analysis found (what the
    pages show: kernelhub.optimization.selectors.problem_family); "" when neither is known."""
    return Coalesce(NullIf(F(problem_path + "family"), Value("")),
                    NullIf(F(problem_path + "offline_coverage_family"), Value("")),
                    Value(""), output_field=TextField())


def timing_ms(field_path: str, which: str) -> Expression:
    return json_float(field_path, which, "median_ms")


def bottleneck(field_path: str, *keys: str) -> Expression:
    # Results store {"class": ..., "reason": ...}; older rows may hold a bare string.
    return Coalesce(json_text(field_path, *keys, "bottleneck", "class"),
                    json_text(field_path, *keys, "bottleneck"))


@dataclass(frozen=True)
class Column:
    name: str
    edm: str
    expr: Any  # ORM path (str) or expression
    nullable: bool = True
    filterable: bool = True

    @property
    def alias(self) -> str:
        return ALIAS_PREFIX + self.name

    def expression(self) -> Expression:
        return F(self.expr) if isinstance(self.expr, str) else self.expr


@dataclass(frozen=True)
class EntitySet:
    name: str        # URL segment and EntitySet name: "kernels"
    type_name: str   # EntityType name: "Kernel"
    columns: tuple[Column, ...]
    base: Callable[[list[int]], QuerySet]
    description: str = ""
    key: str = "id"
    by_name: dict[str, Column] = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "by_name", {c.name: c for c in self.columns})

    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    def queryset(self, team_ids: list[int], names=None) -> QuerySet:
        """The columns `names` (default: all) annotated under their aliases; select them
        with `rows()`. Fewer names mean fewer joins and JSON extractions."""
        wanted = self.columns if names is None else [c for c in self.columns if c.name in names]
        return self.base(team_ids).annotate(**{c.alias: c.expression() for c in wanted})

    def rows(self, queryset: QuerySet, names: list[str], chunk_size: int = 2000
             ) -> Iterator[list[Any]]:
        """Values of `names`, row by row, JSON-ready, without loading the table."""
        aliases = [self.by_name[n].alias for n in names]
        for values in queryset.values_list(*aliases).iterator(chunk_size=chunk_size):
            yield [plain(v) for v in values]


def plain(value: Any) -> Any:
    """A JSON/CSV-ready value: ISO 8601 UTC dates, strings for UUIDs, no NaN."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc)
            return value.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _kernels(team_ids):
    return Review.objects.filter(team_id__in=team_ids, status=Review.Status.APPROVED)


def _sessions(team_ids):
    return SearchSession.objects.filter(team_id__in=team_ids)


def _candidates(team_ids):
    return Candidate.objects.filter(session__team_id__in=team_ids)


def _evaluations(team_ids):
    return Evaluation.objects.filter(team_id__in=team_ids)


C = "candidate__"
S = "candidate__session__"

KERNELS = EntitySet(
    name="kernels", type_name="Kernel", base=_kernels,
    description="Approved kernels (one row per approval).",
    columns=(
        Column("id", INT, "id", nullable=False),
        Column("candidate_id", INT, "candidate_id", nullable=False),
        Column("session_id", INT, C + "session_id", nullable=False),
        Column("team", STR, "team__name", nullable=False),
        Column("problem", STR, S + "problem__name", nullable=False),
        Column("family", STR, problem_family(S + "problem__")),
        Column("hardware", STR, "hardware__name", nullable=False),
        Column("precision_policy", STR, S + "precision_policy"),
        Column("strategy", STR, S + "strategy"),
        Column("speedup_vs_eager", FLOAT, C + "speedup_vs_eager"),
        Column("speedup_vs_compile", FLOAT, C + "speedup_vs_compile"),
        Column("coverage", FLOAT, C + "coverage"),
        Column("reward", FLOAT, C + "reward"),
        Column("candidate_ms", FLOAT, timing_ms(C + "timing", "candidate")),
        Column("eager_ms", FLOAT, timing_ms(C + "timing", "eager")),
        Column("compile_ms", FLOAT, timing_ms(C + "timing", "compile")),
        Column("timing_method", STR, json_text(C + "timing", "candidate", "method")),
        Column("bottleneck", STR, bottleneck(C + "diagnostics")),
        Column("integrity_flag_count", INT, JSONArrayLength(C + "integrity_flags")),
        Column("integrity_override", BOOL, "integrity_override", nullable=False),
        Column("reviewer", STR, "reviewer__username"),
        Column("proposed_by", STR, "proposed_by__username"),
        Column("proposed_at", DATE, "proposed_at", nullable=False),
        Column("approved_at", DATE, "decided_at"),
        Column("comment", STR, "comment"),
    ),
)

SESSIONS = EntitySet(
    name="sessions", type_name="Session", base=_sessions,
    description="Search sessions.",
    columns=(
        Column("id", INT, "id", nullable=False),
        Column("team", STR, "team__name", nullable=False),
        Column("problem", STR, "problem__name", nullable=False),
        Column("family", STR, problem_family("problem__")),
        Column("hardware", STR, "hardware__name", nullable=False),
        Column("strategy", STR, "strategy", nullable=False),
        Column("synthesizer", STR, "synthesizer", nullable=False),
        Column("precision_policy", STR, "precision_policy", nullable=False),
        Column("status", STR, "status", nullable=False),
        Column("budget_evaluations", INT, "budget_evaluations", nullable=False),
        Column("evaluated_count", INT, "evaluated_count", nullable=False),
        Column("best_candidate_id", INT, "best_candidate_id"),
        Column("best_speedup_vs_eager", FLOAT, "best_speedup_vs_eager"),
        Column("best_speedup_vs_compile", FLOAT, "best_speedup_vs_compile"),
        Column("llm_cost_usd", FLOAT, "llm_cost_usd", nullable=False),
        Column("created_by", STR, "created_by__username"),
        Column("created_at", DATE, "created_at", nullable=False),
        Column("started_at", DATE, "started_at"),
        Column("finished_at", DATE, "finished_at"),
    ),
)

CANDIDATES = EntitySet(
    name="candidates", type_name="Candidate", base=_candidates,
    description="Every evaluated node of every search tree.",
    columns=(
        Column("id", INT, "id", nullable=False),
        Column("session_id", INT, "session_id", nullable=False),
        Column("node_id", STR, "node_id", nullable=False),
        Column("parent_id", INT, "parent_id"),
        Column("depth", INT, "depth", nullable=False),
        Column("team", STR, "session__team__name", nullable=False),
        Column("problem", STR, "session__problem__name", nullable=False),
        Column("family", STR, problem_family("session__problem__")),
        Column("hardware", STR, "session__hardware__name", nullable=False),
        Column("strategy", STR, "session__strategy", nullable=False),
        Column("synthesizer", STR, json_text("origin", "synthesizer")),
        Column("transformation", STR, json_text("origin", "transformation")),
        Column("status", STR, "status", nullable=False),
        Column("reward", FLOAT, "reward"),
        Column("advantage", FLOAT, "advantage"),
        Column("speedup_vs_eager", FLOAT, "speedup_vs_eager"),
        Column("speedup_vs_compile", FLOAT, "speedup_vs_compile"),
        Column("coverage", FLOAT, "coverage"),
        Column("candidate_ms", FLOAT, timing_ms("timing", "candidate")),
        Column("eager_ms", FLOAT, timing_ms("timing", "eager")),
        Column("compile_ms", FLOAT, timing_ms("timing", "compile")),
        Column("timing_method", STR, json_text("timing", "candidate", "method")),
        Column("bottleneck", STR, bottleneck("diagnostics")),
        Column("integrity_flag_count", INT, JSONArrayLength("integrity_flags")),
        Column("created_at", DATE, "created_at", nullable=False),
        Column("evaluated_at", DATE, "evaluated_at"),
    ),
)

EVALUATIONS = EntitySet(
    name="evaluations", type_name="Evaluation", base=_evaluations,
    description="Reward-service evaluations (POST /api/v1/evaluations).",
    columns=(
        Column("id", INT, "id", nullable=False),
        Column("batch_id", GUID, "batch_id", filterable=False),
        Column("team", STR, "team__name", nullable=False),
        Column("problem", STR, "problem_name"),
        Column("hardware", STR, "target", nullable=False),
        Column("precision_policy", STR, "precision_policy", nullable=False),
        Column("state", STR, "state", nullable=False),
        Column("status", STR, "status"),
        Column("reward", FLOAT, "reward"),
        Column("speedup_vs_eager", FLOAT, "speedup_vs_eager"),
        Column("speedup_vs_compile", FLOAT, "speedup_vs_compile"),
        Column("coverage", FLOAT, "coverage"),
        Column("candidate_ms", FLOAT, json_float("result", "timing", "candidate", "median_ms")),
        Column("eager_ms", FLOAT, json_float("result", "timing", "eager", "median_ms")),
        Column("timing_method", STR, json_text("result", "timing", "candidate", "method")),
        Column("bottleneck", STR, bottleneck("result", "diagnostics")),
        Column("integrity_flag_count", INT,
               JSONArrayLength(KeyTransform("integrity_flags", "result"))),
        Column("submitted_by", STR, "submitted_by__username"),
        Column("submitted_at", DATE, "submitted_at", nullable=False),
        Column("finished_at", DATE, "finished_at"),
    ),
)

ENTITY_SETS: dict[str, EntitySet] = {
    s.name: s for s in (KERNELS, SESSIONS, CANDIDATES, EVALUATIONS)}
