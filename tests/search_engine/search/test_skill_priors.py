"""Skills as priors: the first children come from matching skills (family, hardware, shape
class), later moves are the synthesizer's; every node names the skills that shaped it; the
use of each skill is scored against the node's parent; a JSON file carries skills to a GPU
node without a database."""

from __future__ import annotations

import json

import pytest

from search_engine.protocols import ContextPassage
from search_engine.search import SearchConfig, SearchRunner
from search_engine.search.skill_priors import (
    SkillGuide, SkillLibrary, SkillPrior, distil_priors, improvement, rank, skill_uses,
)
from search_engine.synthesis.offline import OfflineSynthesizer

from .conftest import problem_source

SOFTMAX = problem_source("softmax")
LOOPED = {"variant": "looped", "ROWS": 2, "BLOCK_R": 512, "num_warps": 2}


def prior(skill_id="7", **changes) -> SkillPrior:
    fields = dict(skill_id=skill_id, transformation="template:rows:random", params=LOOPED,
                  family="softmax", hardware="h200", speedup=2.0)
    fields.update(changes)
    return SkillPrior(**fields)


def run(executor, skills=None, budget=6, seed=1, context=None):
    return SearchRunner(SOFTMAX, "h200", OfflineSynthesizer(), executor,
                        SearchConfig(budget=budget, seed=seed), skills=skills,
                        context=context).run()


def test_the_first_child_comes_from_the_matching_skill_and_later_moves_as_today(
        scripted_executor):
    with_skill = run(scripted_executor, [prior()])
    first = with_skill.nodes[1]
    assert first["origin"]["skills"] == ["7"] and first["origin"]["skill_drawn"] == "7"
    assert first["origin"]["transformation"] == "template:rows:random"
    assert first["origin"]["params"]["variant"] == "looped"
    # Rows of 256, not the skill's 512: ROWS doubles to keep its 1024 elements per program.
    assert (first["origin"]["params"]["BLOCK_R"], first["origin"]["params"]["ROWS"]) == (256, 4)
    assert first["origin"]["params"]["num_warps"] == 2
    assert first["origin"]["shape_class"] == "rows:len2^8:n2^4"
    # Then the skill's parameters as they were; every later node is the synthesizer's own.
    drawn = [n for n in with_skill.nodes if n["origin"].get("skills")]
    assert [n["id"] for n in drawn] == [1, 2] and drawn[1]["origin"]["params"]["ROWS"] == 2
    without = run(scripted_executor, None)
    assert not any(n["origin"].get("skills") for n in without.nodes)
    assert without.nodes[1]["origin"]["transformation"] == "template:rows"


@pytest.mark.parametrize("other", [{"family": "gemm"}, {"hardware": "mi300x"}])
def test_a_skill_of_another_family_or_hardware_is_not_drawn(scripted_executor, other):
    outcome = run(scripted_executor, [prior(**other)], budget=3)
    assert not any(n["origin"].get("skills") for n in outcome.nodes)


def test_generic_skills_match_any_hardware_and_same_shape_class_ranks_first():
    library = SkillLibrary([prior("far", speedup=3.0, shape_class="rows:len2^12:n2^8"),
                            prior("near", speedup=1.5, shape_class="rows:len2^8:n2^4"),
                            prior("generic", hardware="generic", speedup=1.1)])
    found = library.matching(["softmax"], "h200")
    assert {p.skill_id for p in found} == {"far", "near", "generic"}
    assert [p.skill_id for p in rank(found, "rows:len2^8:n2^4")] == ["near", "far", "generic"]
    # A skill that keeps failing its later uses ranks below one that helps.
    failing = prior("failing", speedup=2.0, uses=6, helped=0)
    helping = prior("helping", speedup=1.6, uses=6, helped=5)
    assert [p.skill_id for p in rank([failing, helping], "")] == ["helping", "failing"]


def test_the_guide_stops_after_its_budget_and_counts_a_rebuilt_tree(scripted_executor):
    skills = [prior(str(i), params={**LOOPED, "num_warps": w}) for i, w in enumerate((1, 2, 4, 8))]
    outcome = SearchRunner(SOFTMAX, "h200", OfflineSynthesizer(), scripted_executor,
                           SearchConfig(budget=8, seed=2, children_per_step=2),
                           skills=SkillGuide(skills, max_children=3)).run()
    drawn = [n for n in outcome.nodes if n["origin"].get("skill_drawn") is not None]
    assert len(drawn) == 3
    assert [n["id"] for n in drawn] == [1, 2, 3]  # the first children, not later ones
    rebuilt = SearchRunner.from_nodes(outcome.nodes, SOFTMAX, "h200", OfflineSynthesizer(),
                                      scripted_executor, SearchConfig(budget=10, seed=2),
                                      skills=skills)
    assert rebuilt.skills.drawn == 3


def test_skill_passages_of_the_prompt_are_recorded_as_shaping_the_node(scripted_executor):
    class SkillContext:
        def retrieve(self, query, hardware=None, categories=None, k=5):
            return [ContextPassage("Skill: fuse the row.", "skill: fuse", 0.7, kind="skill",
                                   metadata={"skill_id": 42}),
                    ContextPassage("A manual page.", "guide", 0.5)]

    class ContextReader(OfflineSynthesizer):
        uses_context = True

    outcome = SearchRunner(SOFTMAX, "h200", ContextReader(), scripted_executor,
                           SearchConfig(budget=2, seed=0), context=SkillContext()).run()
    assert all(n["origin"]["skills"] == ["42"] for n in outcome.nodes[1:])


def node(id, parent, status="correct", speedup=None, flags=(), skills=("7",)):
    return {"id": id, "parent_id": parent, "status": status, "speedup_vs_eager": speedup,
            "origin": {"skills": list(skills)},
            "result": {"integrity_flags": list(flags)}}


ROOT = {"id": 0, "parent_id": None, "status": "reference", "origin": {}}


def test_a_use_helped_when_the_node_beat_its_parent_by_the_speedup_ratio():
    nodes = [ROOT, node(1, 0, speedup=1.5), node(2, 1, speedup=1.2), node(3, 1, speedup=3.0),
             node(4, 1, status="incorrect"), node(5, 4, speedup=0.9),
             node(6, 1, speedup=2.0, flags=[{"check": "x", "evidence": "y", "severity": "hack"}]),
             node(7, 1, speedup=2.0,
                  flags=[{"check": "t", "evidence": "n", "severity": "warning"}]),
             node(8, 1, status="pending"), node(9, 1, status="correct", speedup=None),
             node(10, 1, speedup=1.8, skills=())]
    uses = {u.node_id: (u.helped, u.gain) for u in skill_uses(nodes)}
    assert uses["1"] == (True, 1.5)  # over the reference (eager, 1.0x)
    assert uses["2"] == (False, pytest.approx(0.8))
    assert uses["3"] == (True, 2.0)
    assert uses["4"] == (False, 0.0)  # a failed node lost everything
    assert uses["5"] == (True, None)  # fixed a failed parent: helped, gain unknown
    assert uses["6"] == (False, 0.0)  # tainted by a hack flag
    assert uses["7"][0] is True  # a warning does not taint
    # Not evaluated, not measurable (interpreter timings) or not shaped by a skill: no use.
    assert not {"8", "9", "10"} & set(uses)
    assert improvement(node(1, 0, speedup=None), ROOT) is None


def test_skills_travel_as_json_and_a_bad_file_is_a_clear_error(tmp_path):
    nodes = [{"id": 0, "parent_id": None, "status": "reference", "origin": {},
              "diagnostics_summary": {"bottleneck": "memory-bound"}},
             {"id": 1, "parent_id": 0, "status": "correct", "advantage": 0.3,
              "speedup_vs_eager": 1.4, "origin": {"transformation": "template:rows:random",
                                                  "params": LOOPED}},
             {"id": 2, "parent_id": 0, "status": "correct", "advantage": 0.5,
              "speedup_vs_eager": 1.9, "origin": {"transformation": "template:rows:random",
                                                  "params": {**LOOPED, "ROWS": 4}}},
             {"id": 3, "parent_id": 0, "status": "correct", "advantage": -0.1,
              "speedup_vs_eager": 1.2, "origin": {"transformation": "warps_up", "params": {}}}]
    priors = distil_priors(nodes, family="Softmax", hardware="H200", shape_class="rows:x")
    assert [(p.transformation, p.params["ROWS"], p.speedup) for p in priors] == [
        ("template:rows:random", 4, 1.9)]  # the best step's parameters; no negative advantage
    assert priors[0].diagnosis == "memory-bound" and priors[0].family == "softmax"
    path = tmp_path / "skills.json"
    SkillLibrary(priors).save(path)
    assert SkillLibrary.load(path).priors == priors
    path.write_text("{not json")
    with pytest.raises(ValueError, match="cannot read skills"):
        SkillLibrary.load(path)
    path.write_text(json.dumps({"skills": "nope"}))
    with pytest.raises(ValueError, match="expected"):
        SkillLibrary.load(path)


def test_a_skill_source_that_fails_is_logged_and_the_search_goes_on(scripted_executor):
    def broken(families, hardware):
        raise RuntimeError("database away")

    events = []
    outcome = SearchRunner(SOFTMAX, "h200", OfflineSynthesizer(), scripted_executor,
                           SearchConfig(budget=2, seed=0), skills=broken,
                           on_event=events.append).run()
    assert outcome.evaluated == 2
    assert any("skills could not be read: RuntimeError: database away" in
               e["payload"].get("message", "") for e in events if e["type"] == "log")
