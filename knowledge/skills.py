"""Which search steps become skills, and how a skill is written down (no database here)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from search_engine.search.skill_priors import (  # one rule for the search and the knowledge base
    SkillPrior, integrity_is_clean, is_successful_step, node_bottleneck,
)

__all__ = ["SkillDraft", "SkillPrior", "integrity_is_clean", "is_successful_step",
           "skill_drafts", "skill_effect", "skill_prior", "skill_text", "skill_title",
           "skill_metadata"]

# Cosine similarity above which two skills for the same hardware are the same lesson.
MERGE_SIMILARITY = 0.9


@dataclass
class SkillDraft:
    transformation: str
    params: dict[str, Any]
    description: str
    family: str
    hardware: str
    bottleneck_before: str
    bottleneck_after: str
    speedup: float
    advantage: float
    session: str
    node: str
    shape_class: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.transformation, self.family, self.hardware)


def skill_drafts(nodes: list[dict[str, Any]], session_id: Any = None) -> list[SkillDraft]:
    """One draft per successful step of a search tree, given as plain node dicts."""
    by_id = {node.get("id"): node for node in nodes}
    drafts = []
    for node in nodes:
        if not is_successful_step(node):
            continue
        origin = node.get("origin") or {}
        transformation = str(origin.get("transformation") or "").strip()
        if not transformation:
            continue  # nothing nameable to reuse
        parent = by_id.get(node.get("parent_id"))
        drafts.append(SkillDraft(
            transformation=transformation,
            params=dict(origin.get("params") or {}),
            description=str(origin.get("description") or ""),
            family=str(node.get("family") or "").lower(),
            hardware=str(node.get("hardware") or "").lower(),
            bottleneck_before=node_bottleneck(parent),
            bottleneck_after=node_bottleneck(node),
            speedup=float(node["speedup_vs_eager"]),
            advantage=float(node["advantage"]),
            session=str(node.get("session") or node.get("session_id") or session_id or ""),
            node=str(node.get("id")),
            shape_class=str(origin.get("shape_class") or ""),
        ))
    return drafts


def skill_title(transformation: str, family: str, hardware: str) -> str:
    where = " ".join(p for p in (family, "kernels" if family else "", f"on {hardware}" if hardware else "") if p)
    return f"{transformation} for {where}" if where else transformation


def skill_text(skill) -> str:
    """What is embedded and what a prompt shows: the lesson in one paragraph."""
    parts = [f"Skill: {skill.title}."]
    if skill.description:
        parts.append(skill.description.rstrip(".") + ".")
    if skill.params:
        parts.append("Parameters: " + ", ".join(f"{k}={v}" for k, v in sorted(skill.params.items())) + ".")
    if skill.bottleneck_before:
        after = f", after: {skill.bottleneck_after}" if skill.bottleneck_after else ""
        parts.append(f"Bottleneck before: {skill.bottleneck_before}{after}.")
    parts.append(f"Measured speedup vs eager: {skill.speedup_mean:.2f}x mean, "
                 f"{skill.speedup_best:.2f}x best over {skill.observations} step(s).")
    if skill.uses:
        parts.append(skill_use_text(skill))
    return " ".join(parts)


def skill_use_text(skill) -> str:
    """Its record in later sessions, in one sentence (prompts and pages)."""
    gain = "" if skill.gain_mean is None else f", mean gain over the parent {skill.gain_mean:.2f}x"
    return (f"Reused {skill.uses} time(s) later: beat its parent {skill.helped_count} "
            f"time(s){gain}.")


def skill_effect(skill) -> dict[str, Any]:
    """Its measured effect, as a prompt shows it (search_engine.synthesis.prompts)."""
    return {"speedup_mean": round(skill.speedup_mean, 4),
            "speedup_best": round(skill.speedup_best, 4),
            "observations": skill.observations, "uses": skill.uses, "helped": skill.helped_count,
            "gain_mean": None if skill.gain_mean is None else round(skill.gain_mean, 4)}


def skill_prior(skill) -> SkillPrior:
    """A stored skill as the search uses it (search_engine.search.skill_priors)."""
    return SkillPrior(
        skill_id=str(skill.pk), transformation=skill.transformation,
        params=dict(skill.params or {}),
        family=skill.family, hardware=skill.hardware, shape_class=skill.shape_class,
        diagnosis=skill.bottleneck_before, speedup=float(skill.speedup_best),
        uses=skill.uses, helped=skill.helped_count)


def skill_metadata(skill) -> dict[str, Any]:
    # team_id 0: no team owns it (knowledge.scope.NO_TEAM); scoped queries filter on it.
    return {"skill_id": skill.pk, "hardware": skill.hardware, "family": skill.family,
            "transformation": skill.transformation, "retired": skill.retired,
            "team_id": skill.team_id or 0, "shared": bool(skill.shared)}


def skill_where(hardware: str | None, *, include_retired: bool = False) -> dict | None:
    clauses: list[dict] = []
    if not include_retired:
        clauses.append({"retired": False})
    if hardware:
        clauses.append({"hardware": {"$in": [hardware.lower(), "generic"]}})
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}
