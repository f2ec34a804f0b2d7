"""Skills scored by their later use: a session's nodes name the skills that shaped them; when
the session ends (finished or cancelled) each skill's record is updated once per node, shown
on the skills page, team-scoped; a skill that keeps failing is retired automatically and a
reviewer can bring it back."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.urls import reverse

from knowledge.models import Skill, SkillUse
from knowledge.selectors import KnowledgeScope, skill_priors
from knowledge.services import (
    RETIRE_AFTER_FAILURES, session_record_skill_use, skill_record_outcome, skill_restore,
)

BLOCKS = {"BLOCK": 256, "num_warps": 2}


def make_skill(team, **changes) -> Skill:
    fields = dict(title="template for elementwise kernels on interpreter",
                  transformation="template:elementwise:random", params=BLOCKS,
                  family="elementwise", hardware="interpreter", speedup_mean=1.5,
                  speedup_best=1.7, team=team)
    fields.update(changes)
    return Skill.objects.create(**fields)


def make_session(teams, hardware, problem, team="alpha", **changes):
    from kernelhub.optimization.services import session_create

    options = dict(user=teams["users"][(team, "engineer")], team=teams[team], problem=problem,
                   hardware=hardware["interpreter"], budget_evaluations=3, seed=1,
                   config={"children_per_step": 1, "max_in_flight": 1,
                           "policy_options": {"restart_probability": 0.0}})
    options.update(changes)
    return session_create(**options)


def nodes_using(skill_ids, outcomes):
    """Node dicts: the root, then one child of the root per (status, speedup)."""
    nodes = [{"id": 0, "parent_id": None, "status": "reference", "origin": {}}]
    for i, (status, speedup) in enumerate(outcomes, start=1):
        nodes.append({"id": i, "parent_id": 0, "status": status, "speedup_vs_eager": speedup,
                      "origin": {"skills": [str(s) for s in skill_ids]},
                      "result": {"integrity_flags": []}})
    return nodes


def test_a_session_scores_each_skill_once_per_node_with_its_gain(kb, teams, hardware,
                                                                library_problem):
    skill = make_skill(teams["alpha"])
    session = make_session(teams, hardware, library_problem)
    nodes = nodes_using([skill.pk], [("correct", 1.5), ("correct", 0.5), ("incorrect", None),
                                     ("correct", None)])
    recorded = session_record_skill_use(session, nodes)
    assert [(u.node_id, u.helped) for u in recorded] == [("1", True), ("2", False), ("3", False)]
    skill.refresh_from_db()
    assert (skill.helped_count, skill.not_helped_count, skill.uses) == (1, 2, 3)
    assert skill.gain_mean == pytest.approx((1.5 + 0.5 + 0.0) / 3) and skill.gain_uses == 3
    assert skill.last_used_at is not None
    # The session finishing again (resumed, then finished) counts nothing twice.
    assert session_record_skill_use(session, nodes) == []
    skill.refresh_from_db()
    assert skill.uses == 3 and SkillUse.objects.filter(skill=skill).count() == 3


def test_another_teams_private_skill_is_not_scored_by_this_team(kb, teams, hardware,
                                                                library_problem):
    theirs = make_skill(teams["beta"])
    shared = make_skill(teams["beta"], shared=True)
    session = make_session(teams, hardware, library_problem)
    session_record_skill_use(session, nodes_using([theirs.pk, shared.pk, 999_999],
                                                  [("correct", 2.0)]))
    assert Skill.objects.get(pk=theirs.pk).uses == 0
    assert Skill.objects.get(pk=shared.pk).helped_count == 1


def test_the_search_reads_only_its_teams_and_shared_skills_as_priors(kb, teams):
    mine = make_skill(teams["alpha"])
    make_skill(teams["beta"])  # private to beta
    shared = make_skill(teams["beta"], shared=True, speedup_best=1.2)
    generic = make_skill(teams["alpha"], hardware="generic", speedup_best=1.1)
    make_skill(teams["alpha"], hardware="h200")
    make_skill(teams["alpha"], family="gemm")
    make_skill(teams["alpha"], retired=True)
    scope = KnowledgeScope.for_teams([teams["alpha"].pk])
    found = skill_priors(scope=scope, families=["elementwise"], hardware="interpreter")
    assert [p.skill_id for p in found] == [str(mine.pk), str(shared.pk), str(generic.pk)]
    assert found[0].params == BLOCKS and found[0].speedup == pytest.approx(1.7)


def test_a_skill_that_keeps_failing_retires_itself_and_a_reviewer_restores_it(
        kb, teams, hardware, library_problem, client):
    from kernelhub.review.models import AuditEvent

    skill = make_skill(teams["alpha"])
    session = make_session(teams, hardware, library_problem)
    skill_record_outcome(skill.pk, True, gain=1.2, session=session, node_id="a")
    for i in range(RETIRE_AFTER_FAILURES - 1):
        skill_record_outcome(skill.pk, False, gain=0.8, session=session, node_id=f"f{i}")
    assert not Skill.objects.get(pk=skill.pk).retired  # one failure short
    skill = skill_record_outcome(skill.pk, False, gain=0.7, session=session, node_id="last")
    assert skill.retired and skill.retired_automatically
    assert "did not beat their parent" in skill.retired_reason
    assert AuditEvent.objects.filter(action="skill_auto_retired", target_id=str(skill.pk)).exists()
    scope = KnowledgeScope.for_teams([teams["alpha"].pk])
    assert skill_priors(scope=scope, families=["elementwise"], hardware="interpreter") == []

    url = reverse("knowledge:skill_retire", args=[skill.pk])
    client.force_login(teams["users"][("alpha", "viewer")])
    assert client.post(url, {"retired": "0"}).status_code == 403
    client.force_login(teams["users"][("beta", "reviewer")])
    assert client.post(url, {"retired": "0"}).status_code == 404  # another team's skill
    client.force_login(teams["users"][("alpha", "reviewer")])
    page = client.get(reverse("knowledge:skill_detail", args=[skill.pk])).content.decode()
    assert 'id="kb-restore"' in page and "retired automatically" in page
    assert client.post(url, {"retired": "0"}).status_code == 302
    skill.refresh_from_db()
    assert not skill.retired and not skill.retired_automatically and skill.restored_at
    assert AuditEvent.objects.filter(action="skill_restored", target_id=str(skill.pk)).exists()
    # Only uses after the restore count: one more failure does not retire it again.
    skill = skill_record_outcome(skill.pk, False, gain=0.9, session=session, node_id="after")
    assert not skill.retired


def test_a_reviewer_may_restore_but_not_retire(kb, teams):
    from django.core.exceptions import PermissionDenied

    from knowledge.services import skill_retire

    skill = make_skill(teams["alpha"], retired=True)
    with pytest.raises(PermissionDenied):
        skill_restore(skill, user=teams["users"][("alpha", "viewer")])
    skill_restore(skill, user=teams["users"][("alpha", "reviewer")])
    with pytest.raises(PermissionDenied, match="engineer or admin"):
        skill_retire(skill, user=teams["users"][("alpha", "reviewer")])


def test_the_skills_pages_show_the_record_of_use(kb, teams, hardware, library_problem, client):
    skill = make_skill(teams["alpha"], shared=True)
    mine = make_session(teams, hardware, library_problem)
    theirs = make_session(teams, hardware, library_problem, team="beta")
    skill_record_outcome(skill.pk, True, gain=1.25, session=mine, node_id="3")
    skill_record_outcome(skill.pk, False, gain=0.5, session=theirs, node_id="4")
    client.force_login(teams["users"][("alpha", "viewer")])
    listing = client.get(reverse("knowledge:skill_list")).content.decode()
    assert '<td class="kb-skill-helped">1/2</td>' in listing and "0.88×" in listing
    page = client.get(reverse("knowledge:skill_detail", args=[skill.pk])).content.decode()
    assert "helped 1 time, did not help 1" in page and "mean gain over the parent 0.88×" in page
    uses = page[page.index('id="kb-skill-uses"'):]
    assert f"#{mine.pk} tiny-relu" in uses and "1.25×" in uses
    assert "another team" in uses and f"#{theirs.pk} " not in uses
    (row,) = client.get("/api/v1/skills/").json()["results"]  # the API shows the record too
    assert (row["uses"], row["helped_count"], row["retired_automatically"]) == (2, 1, False)
    assert row["gain_mean"] == pytest.approx(0.875)


@pytest.mark.django_db(transaction=True)
def test_a_real_session_draws_from_the_teams_skill_and_scores_it_when_it_ends(
        kb, teams, hardware, library_problem, monkeypatch):
    from kernelhub.optimization import runner
    from kernelhub.optimization.models import Candidate, SearchSession
    from tests.search_engine.search.conftest import ScriptedExecutor

    monkeypatch.setattr("kernelhub.placement.evaluation_executor",
                        lambda session_id=None: ScriptedExecutor(max_delay=0.0))
    skill = make_skill(teams["alpha"])
    session = make_session(teams, hardware, library_problem)
    runner.run_session(session.pk)
    session.refresh_from_db()
    assert session.status == SearchSession.Status.FINISHED, session.status_message
    first = Candidate.objects.get(session=session, node_id="1")
    assert first.origin["skills"] == [str(skill.pk)]
    assert first.origin["skill_drawn"] == str(skill.pk)
    assert first.origin["params"] == BLOCKS
    others = Candidate.objects.filter(session=session).exclude(node_id__in=["0", "1"])
    assert others and not any(c.origin.get("skills") for c in others)  # later moves as today
    use = SkillUse.objects.get(skill=skill)
    assert (use.session_id, use.node_id) == (session.pk, "1")
    helped = first.status == "correct" and first.speedup_vs_eager > 1.0
    assert use.helped is helped
    if first.status == "correct":
        assert use.gain == pytest.approx(first.speedup_vs_eager)


def test_a_cancelled_session_scores_its_skills_too(kb, teams, hardware, library_problem):
    from kernelhub.optimization import runner
    from kernelhub.optimization.services import session_cancel

    skill = make_skill(teams["alpha"])
    session = make_session(teams, hardware, library_problem)
    session_cancel(session, user=teams["users"][("alpha", "engineer")])
    outcome = SimpleNamespace(status="cancelled", reason="cancelled", nodes=nodes_using(
        [skill.pk], [("correct", 1.4)]))
    runner.finish_session(session, outcome)
    assert Skill.objects.get(pk=skill.pk).helped_count == 1


def test_skills_export_to_a_json_file_the_search_reads(kb, teams, tmp_path):
    from django.core.management import CommandError, call_command

    from search_engine.search.skill_priors import SkillLibrary

    mine = make_skill(teams["alpha"])
    make_skill(teams["beta"])
    make_skill(teams["alpha"], retired=True)
    path = tmp_path / "skills.json"
    call_command("kb_skills_export", str(path), "--team", teams["alpha"].slug)
    library = SkillLibrary.load(path)
    assert [p.skill_id for p in library.priors] == [str(mine.pk)]
    assert library.matching(["elementwise"], "interpreter")[0].params == BLOCKS
    with pytest.raises(CommandError, match="no team has that slug"):
        call_command("kb_skills_export", str(path), "--team", "nobody")
    with pytest.raises(CommandError, match="cannot write"):
        call_command("kb_skills_export", str(tmp_path / "missing" / "x.json"))
