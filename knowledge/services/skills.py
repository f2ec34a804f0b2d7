"""Skills: distilled from a finished session's successful steps (merged with the team's
similar ones), scored by their later use (retired when they keep failing), edited,
retired and restored by hand."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from knowledge import store
from knowledge.embeddings import embed
from knowledge.errors import KnowledgeInputError
from knowledge.models import Skill, SkillUse
from knowledge.scope import NO_TEAM, KnowledgeScope
from knowledge.services.access import audit, require_role, user_may
from knowledge.skills import (
    MERGE_SIMILARITY, SkillDraft, skill_drafts, skill_metadata, skill_text, skill_title,
)


def skill_index(skill: Skill) -> None:
    store.upsert(store.SKILLS, [f"skill-{skill.pk}"], embed([skill_text(skill)]),
                 [skill_metadata(skill)], [skill_text(skill)])


def _similar_skill(draft: SkillDraft, text: str, team) -> Skill | None:
    """The team's own active skill that is the same lesson (never another team's)."""
    own = Skill.objects.filter(team=team) if team is not None else Skill.objects.filter(team__isnull=True)
    exact = own.filter(transformation=draft.transformation, family=draft.family,
                       hardware=draft.hardware, retired=False).first()
    if exact or not own.filter(retired=False, hardware=draft.hardware).exists():
        return exact
    clauses: list[dict] = [{"retired": False}, {"team_id": team.pk if team is not None else NO_TEAM}]
    if draft.hardware:
        clauses.append({"hardware": draft.hardware})
    hits = store.query(store.SKILLS, embed([text])[0], 1, where={"$and": clauses})
    if hits and hits[0][1] >= MERGE_SIMILARITY:
        return own.filter(pk=int(hits[0][0].removeprefix("skill-")), retired=False).first()
    return None


def _session_team(session_id: Any):
    """The team of session `session_id` (skills belong to their session's team)."""
    if session_id is None or not str(session_id).isdigit():
        return None
    from kernelhub.optimization.models import SearchSession

    session = SearchSession.objects.select_related("team").filter(pk=int(session_id)).first()
    return session.team if session is not None else None


def distill_session_skills(nodes: list[dict[str, Any]], session_id: Any = None, *,
                           team=None) -> list[Skill]:
    """Turn a finished session's successful steps into skills of the session's team,
    merging similar ones of that team.

    `nodes` are plain dicts (id, parent_id, status, reward, advantage, speedup_vs_eager,
    origin {transformation, params}, diagnostics {bottleneck}, integrity_flags, family,
    hardware, session). `team` defaults to the team of session `session_id`; skills
    without either belong to no team (staff only). Returns the skills created or updated.
    """
    if team is None:
        team = _session_team(session_id)
    touched: dict[int, Skill] = {}
    for draft in skill_drafts(nodes, session_id):
        candidate = Skill(
            title=skill_title(draft.transformation, draft.family, draft.hardware)[:300],
            description=draft.description, transformation=draft.transformation[:200],
            params=draft.params, family=draft.family[:64], hardware=draft.hardware[:64],
            bottleneck_before=draft.bottleneck_before[:64], bottleneck_after=draft.bottleneck_after[:64],
            speedup_mean=draft.speedup, speedup_best=draft.speedup, advantage_mean=draft.advantage,
            observations=1, sessions=[draft.session] if draft.session else [],
            source_nodes=[f"{draft.session}:{draft.node}"], team=team,
            shape_class=draft.shape_class[:100],
        )
        with transaction.atomic():
            skill = _similar_skill(draft, skill_text(candidate), team)
            if skill is None:
                skill = candidate
                skill.save()
            else:
                _merge(skill, draft)
            skill_index(skill)
        touched[skill.pk] = skill
    return list(touched.values())


def _merge(skill: Skill, draft: SkillDraft) -> None:
    n = skill.observations
    skill.speedup_mean = (skill.speedup_mean * n + draft.speedup) / (n + 1)
    skill.advantage_mean = (skill.advantage_mean * n + draft.advantage) / (n + 1)
    if draft.speedup > skill.speedup_best:  # the search reuses the best step's parameters
        skill.params = draft.params
        skill.shape_class = draft.shape_class[:100] or skill.shape_class
    skill.speedup_best = max(skill.speedup_best, draft.speedup)
    skill.observations = n + 1
    if draft.session and draft.session not in skill.sessions:
        skill.sessions = [*skill.sessions, draft.session]
    skill.source_nodes = [*skill.source_nodes, f"{draft.session}:{draft.node}"][-200:]
    skill.bottleneck_before = skill.bottleneck_before or draft.bottleneck_before
    skill.bottleneck_after = skill.bottleneck_after or draft.bottleneck_after
    skill.description = skill.description or draft.description
    skill.save()


# A skill whose last this many uses (since a reviewer last restored it) all failed to beat
# their parent is retired automatically.
RETIRE_AFTER_FAILURES = 5


def skill_record_outcome(skill_id: int, helped: bool, *, gain: float | None = None,
                         session=None, node_id: str = "") -> Skill:
    """Count one use of a skill: the node it shaped beat its parent (`helped`) or not, by
    `gain` (node speedup / parent speedup). With a `session` and `node_id` the use is
    recorded once per node (a session finishing again counts nothing twice). A skill that
    keeps failing is retired automatically (`RETIRE_AFTER_FAILURES`)."""
    with transaction.atomic():
        skill = Skill.objects.select_for_update().filter(pk=skill_id).first()
        if skill is None:
            raise Skill.DoesNotExist(f"skill {skill_id} does not exist")
        if session is not None and SkillUse.objects.filter(
                skill=skill, session=session, node_id=str(node_id)).exists():
            return skill
        SkillUse.objects.create(skill=skill, session=session, node_id=str(node_id),
                                helped=bool(helped), gain=gain)
        field = "helped_count" if helped else "not_helped_count"
        changes: dict[str, Any] = {field: F(field) + 1, "last_used_at": timezone.now()}
        if gain is not None:
            count = skill.gain_uses
            changes.update(gain_uses=count + 1,
                           gain_mean=((skill.gain_mean or 0.0) * count + gain) / (count + 1))
        Skill.objects.filter(pk=skill.pk).update(**changes)
        skill.refresh_from_db()
        if not skill.retired and _keeps_failing(skill):
            _retire_automatically(skill)
    return skill


def _keeps_failing(skill: Skill) -> bool:
    recent = SkillUse.objects.filter(skill=skill)
    if skill.restored_at is not None:
        recent = recent.filter(created_at__gt=skill.restored_at)
    last = list(recent.order_by("-created_at", "-pk").values_list("helped", flat=True)
                [:RETIRE_AFTER_FAILURES])
    return len(last) == RETIRE_AFTER_FAILURES and not any(last)


def _retire_automatically(skill: Skill) -> None:
    skill.retired, skill.retired_automatically = True, True
    skill.retired_reason = (f"retired automatically: its last {RETIRE_AFTER_FAILURES} uses "
                            "did not beat their parent")
    skill.save(update_fields=["retired", "retired_automatically", "retired_reason", "updated_at"])
    audit(team=skill.team, user=None, action="skill_auto_retired", target=skill,
           details={"title": skill.title, "reason": skill.retired_reason,
                    "helped": skill.helped_count, "not_helped": skill.not_helped_count})
    skill_index(skill)


def session_record_skill_use(session, nodes: list[dict[str, Any]]) -> list[SkillUse]:
    """Score the skills that shaped a finished (or cancelled) session's nodes: one use per
    node, helped when it beat its parent (search_engine.search.skill_priors.skill_uses).
    Skills since deleted, or another team's, are skipped. Returns the new uses."""
    from search_engine.search.skill_priors import skill_uses

    uses = [u for u in skill_uses(nodes) if u.skill_id.isdigit()]
    visible = set(Skill.objects.filter(
        pk__in={int(u.skill_id) for u in uses}).filter(
        KnowledgeScope.for_teams([session.team_id]).q()).values_list("pk", flat=True))
    recorded = []
    for use in uses:
        if int(use.skill_id) not in visible:
            continue
        before = SkillUse.objects.filter(skill_id=int(use.skill_id), session=session,
                                         node_id=use.node_id).exists()
        skill_record_outcome(int(use.skill_id), use.helped, gain=use.gain, session=session,
                             node_id=use.node_id)
        if not before:
            recorded.append(use)
    return recorded


SKILL_EDITABLE = ("title", "description", "transformation", "params", "family", "hardware",
                  "bottleneck_before", "bottleneck_after")


def skill_update(skill: Skill, *, user=None, **fields: Any) -> Skill:
    require_role(user, skill.team, "upload", "Editing skills")
    unknown = set(fields) - set(SKILL_EDITABLE)
    if unknown:
        raise KnowledgeInputError(f"Cannot edit {', '.join(sorted(unknown))} of a skill.")
    for name, value in fields.items():
        setattr(skill, name, value.strip().lower() if name in ("family", "hardware") else value)
    with transaction.atomic():
        skill.save()
        skill_index(skill)
    return skill


def skill_retire(skill: Skill, *, retired: bool = True, user=None) -> Skill:
    """Retired skills stay on record but are no longer retrieved or merged into."""
    if not retired:
        return skill_restore(skill, user=user)
    require_role(user, skill.team, "upload", "Retiring skills")
    with transaction.atomic():
        skill.retired = retired
        skill.retired_automatically = False
        skill.retired_reason = "retired by hand"
        skill.save(update_fields=["retired", "retired_automatically", "retired_reason",
                                  "updated_at"])
        audit(team=skill.team, user=user, action="skill_retired" if retired else "skill_restored",
               target=skill, details={"title": skill.title})
        skill_index(skill)
    return skill


def user_may_restore(user, skill: Skill) -> bool:
    """Reviewers (and engineers, admins) of the skill's team may bring a retired skill back."""
    return user_may(user, skill.team, "review") or user_may(user, skill.team, "upload")


def skill_restore(skill: Skill, *, user=None) -> Skill:
    """Bring a retired skill back (also one retired automatically); only its uses from now
    on count towards retiring it again."""
    if not user_may_restore(user, skill):
        require_role(user, skill.team, "review", "Restoring skills")
    with transaction.atomic():
        was_automatic = skill.retired_automatically
        skill.retired, skill.retired_automatically, skill.retired_reason = False, False, ""
        skill.restored_at = timezone.now()
        skill.save(update_fields=["retired", "retired_automatically", "retired_reason",
                                  "restored_at", "updated_at"])
        audit(team=skill.team, user=user, action="skill_restored", target=skill,
               details={"title": skill.title, "was_retired_automatically": was_automatic})
        skill_index(skill)
    return skill
