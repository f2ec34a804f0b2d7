"""The search's ContextProvider: query from problem + diagnosis + errors, hardware filter
with vendor-neutral pages, and matching skills."""

from knowledge.context import KnowledgeContextProvider, build_query
from knowledge.services import distill_session_skills
from search_engine.protocols import ContextPassage, ContextProvider


def test_build_query_uses_problem_diagnosis_and_errors():
    query = build_query("row-wise softmax over 4096 columns",
                        {"bottleneck": "memory", "registers": 96},
                        ["RuntimeError: Triton Error [CUDA]: out of resources: shared memory"])
    assert "softmax" in query and "memory-bound" in query and "coalesced" in query
    assert "registers 96" in query and "out of resources" in query
    assert build_query("", None, None) == ""


def test_provider_returns_passages_and_skills(kb, ingest, teams):
    alpha = teams["alpha"]
    ingest("hbm.md", b"# H100 memory\n\nHBM3 bandwidth is reached only with coalesced, vectorized loads.\n",
           hardware="h100", category="hardware-specific", team=alpha)
    ingest("mi.md", b"# MI300X memory\n\nHBM3 on MI300X needs coalesced vectorized loads too.\n",
           hardware="mi300x", category="hardware-specific", team=alpha)
    ingest("neutral.md", b"# Coalescing\n\nAdjacent lanes, adjacent addresses: coalesced memory access.\n",
           team=alpha)
    distill_session_skills([
        {"id": 0, "parent_id": None, "diagnostics": {"bottleneck": "memory"}, "status": "correct",
         "family": "softmax", "hardware": "h100", "session": "s9"},
        {"id": 1, "parent_id": 0, "status": "correct", "advantage": 0.3, "speedup_vs_eager": 1.6,
         "origin": {"transformation": "vectorized 128-bit loads", "params": {"VEC": 4}},
         "diagnostics": {"bottleneck": "memory"}, "integrity_flags": [], "family": "softmax",
         "hardware": "h100", "session": "s9"},
    ], team=alpha)
    provider: ContextProvider = KnowledgeContextProvider(skills=2, team_id=alpha.pk)
    passages = provider.retrieve_for_node(problem="softmax", diagnosis={"bottleneck": "memory"},
                                          errors=[], hardware="h100", k=10)
    assert all(isinstance(p, ContextPassage) for p in passages)
    documents = [p for p in passages if p.kind == "document"]
    skills = [p for p in passages if p.kind == "skill"]
    names = {p.document for p in documents}
    assert "H100 memory" in names and "Coalescing" in names and "MI300X memory" not in names
    assert all({"h100", "generic"} & set(p.metadata["hardware"]) for p in documents)
    assert skills and "vectorized 128-bit loads" in skills[0].text and "1.60x" in skills[0].text
    assert skills[0].metadata["skill_id"]
