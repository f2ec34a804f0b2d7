"""Successful steps become skills; similar ones merge; use is counted; retired ones hide."""

import pytest

from knowledge import store
from knowledge.models import Skill
from knowledge.selectors import KnowledgeScope
from knowledge.selectors import skill_search as scoped_skill_search
from knowledge.services import distill_session_skills, skill_record_outcome, skill_retire, skill_update
from knowledge.skills import is_successful_step


def skill_search(*args, **kwargs):
    """The operator's view: these tests are about distilling and ranking, not teams."""
    return scoped_skill_search(*args, scope=KnowledgeScope.ALL, **kwargs)


def node(id, parent=0, *, transformation="vectorize_loads", advantage=0.4, speedup=1.8,
         status="correct", flags=(), family="softmax", hardware="h100", bottleneck="memory",
         session="s1", params=None):
    return {
        "id": id, "parent_id": parent, "status": status, "reward": 1.0, "advantage": advantage,
        "speedup_vs_eager": speedup, "origin": {"transformation": transformation,
                                                "params": params or {"width": 4}},
        "diagnostics": {"bottleneck": bottleneck}, "integrity_flags": list(flags),
        "family": family, "hardware": hardware, "session": session,
    }


ROOT = {"id": 0, "parent_id": None, "status": "correct", "advantage": None,
        "speedup_vs_eager": 1.0, "origin": {}, "diagnostics": {"bottleneck": "memory-bound"},
        "integrity_flags": [], "family": "softmax", "hardware": "h100", "session": "s1"}


@pytest.mark.parametrize("change, successful", [
    ({}, True),
    ({"advantage": -0.1}, False),
    ({"advantage": 0.0}, False),
    ({"speedup": 1.0}, False),
    ({"speedup": 0.7}, False),
    ({"status": "incorrect"}, False),
    ({"flags": [{"check": "static.forbidden_import", "evidence": "torch.matmul", "severity": "hack"}]}, False),
    ({"flags": [{"check": "timing.noisy", "evidence": "IQR 9%", "severity": "warning"}]}, True),
])
def test_what_counts_as_a_successful_step(change, successful):
    assert is_successful_step(node(1, **change)) is successful


def test_distill_creates_merges_and_counts(kb):
    first = distill_session_skills([ROOT, node(1), node(2, transformation="fuse_epilogue", speedup=1.2,
                                                       advantage=-0.2), node(3, flags=["hack"])])
    assert len(first) == 1
    skill = first[0]
    assert skill.transformation == "vectorize_loads" and skill.family == "softmax"
    assert skill.hardware == "h100" and skill.bottleneck_before == "memory-bound"
    assert skill.bottleneck_after == "memory" and skill.sessions == ["s1"]
    assert skill.speedup_mean == pytest.approx(1.8) and skill.observations == 1
    # A later session repeats the lesson: same transformation, family and hardware.
    again = distill_session_skills([dict(ROOT, session="s2"), node(7, speedup=2.2, session="s2")])
    assert [s.pk for s in again] == [skill.pk]
    skill.refresh_from_db()
    assert skill.observations == 2 and skill.sessions == ["s1", "s2"]
    assert skill.speedup_mean == pytest.approx(2.0) and skill.speedup_best == pytest.approx(2.2)
    # Other hardware is another lesson.
    other = distill_session_skills([dict(ROOT, hardware="mi300x"), node(9, hardware="mi300x")])
    assert other[0].pk != skill.pk
    assert Skill.objects.count() == 2


def test_similar_descriptions_merge_by_embedding(kb):
    a = distill_session_skills([ROOT, node(1, transformation="vectorize loads with 128-bit accesses")])[0]
    b = distill_session_skills([ROOT, node(2, transformation="vectorize loads using 128-bit accesses")])[0]
    assert a.pk == b.pk
    assert Skill.objects.get(pk=a.pk).observations == 2


def test_record_outcome(kb):
    skill = distill_session_skills([ROOT, node(1)])[0]
    skill_record_outcome(skill.pk, helped=True)
    skill_record_outcome(skill.pk, helped=True)
    skill = skill_record_outcome(skill.pk, helped=False)
    assert (skill.helped_count, skill.not_helped_count, skill.uses) == (2, 1, 3)
    assert skill.help_rate == pytest.approx(2 / 3)
    with pytest.raises(Skill.DoesNotExist):
        skill_record_outcome(999_999, helped=True)


def test_search_edit_and_retire(kb):
    skill = distill_session_skills([ROOT, node(1)])[0]
    distill_session_skills([dict(ROOT, family="matmul"), node(2, transformation="swizzle_grid_for_l2",
                                                            family="matmul", bottleneck="l2")])
    hits = skill_search("softmax is memory bound; wider vector loads", hardware="h100")
    assert hits[0][0].pk == skill.pk
    assert skill_search("softmax vector loads", hardware="mi300x") == []
    skill_update(skill, description="Load four floats per thread with tl.load on a 4-wide block.",
                 hardware="H100")
    assert Skill.objects.get(pk=skill.pk).hardware == "h100"
    meta = store.collection(store.SKILLS).get(ids=[f"skill-{skill.pk}"], include=["documents"])
    assert "four floats per thread" in meta["documents"][0]
    skill_retire(skill)
    assert all(s.pk != skill.pk for s, _ in skill_search("softmax vector loads", hardware="h100"))
    # A retired skill is not merged into either: the lesson starts a new skill.
    fresh = distill_session_skills([ROOT, node(5)])[0]
    assert fresh.pk != skill.pk
