"""Transformations: the diagnosis picks the first moves; proposals are new and seeded."""

import random

from search_engine.hardware import get_target
from search_engine.synthesis.base import MemoryView, NodeView, SynthesisRequest
from search_engine.synthesis.offline import OfflineSynthesizer
from search_engine.synthesis.offline.spaces import templates
from search_engine.synthesis.offline.synthesizer import family_module

from .conftest import library_source


def request(source, parent, mode="trajectory", known=(), second=None):
    return SynthesisRequest(problem_source=source, target=get_target("h200"), parent=parent,
                            memory=MemoryView(mode), known_sources=set(known),
                            second_parent=second)


def root_view(source):
    return NodeView(id=0, source=source, origin={"synthesizer": "reference"},
                    status="reference")


def test_root_expansion_starts_from_the_template_defaults():
    source = library_source("softmax")
    proposals = OfflineSynthesizer().propose(request(source, root_view(source)), 3,
                                             random.Random(0))
    assert len(proposals) == 3
    assert proposals[0].transformation == "template:rows"
    assert len({p.source for p in proposals}) == 3


def node(source, params, status="correct", bottleneck="memory-bound"):
    return NodeView(id=4, source=source, status=status,
                    origin={"synthesizer": "offline", "params": params},
                    diagnostics={"bottleneck": {"class": bottleneck, "reason": "x"}})


def test_diagnosis_orders_the_moves():
    syn = OfflineSynthesizer()
    source = library_source("linear_gelu")
    an = syn.analysis(source)
    params = templates.default_params(an, "h200", "tf32")
    memory = syn.propose(request(source, node(syn.render(source, params), params)), 2,
                         random.Random(0))
    assert [p.transformation for p in memory][0] in templates.MOVES_BY_DIAGNOSIS["memory"]
    failed = syn.propose(request(source, node("x", params, status="compile_error")), 2,
                         random.Random(0))
    assert failed[0].transformation in templates.MOVES_BY_DIAGNOSIS["failure"]
    assert failed[0].params["BLOCK_M"] <= params["BLOCK_M"]


def test_known_sources_are_not_proposed_again():
    syn = OfflineSynthesizer()
    source = library_source("softmax")
    first = syn.propose(request(source, root_view(source)), 2, random.Random(0))
    again = syn.propose(request(source, root_view(source), known=[p.source for p in first]), 2,
                        random.Random(0))
    assert not {p.source for p in first} & {p.source for p in again}


def test_same_rng_same_proposals():
    syn = OfflineSynthesizer()
    source = library_source("rmsnorm")
    a = syn.propose(request(source, root_view(source)), 3, random.Random(5))
    b = syn.propose(request(source, root_view(source)), 3, random.Random(5))
    assert [p.source for p in a] == [p.source for p in b]


def test_crossover_mixes_parent_parameters():
    syn = OfflineSynthesizer()
    source = library_source("linear_gelu")
    an = syn.analysis(source)
    p1 = templates.default_params(an, "h200", "strict")
    p2 = templates.clamp(an, {**p1, "BLOCK_M": 16, "num_warps": 2, "num_stages": 1})
    out = syn.propose(request(source, node("a", p1), second=node("b", p2)), 4,
                      random.Random(1))
    assert out and all(p.transformation == "crossover" for p in out)
    for p in out:
        assert all(p.params[k] in (p1[k], p2[k]) for k in p1)


def test_matmul_tiles_that_overflow_shared_memory_are_not_proposed():
    syn = OfflineSynthesizer()
    source = library_source("linear_gelu").replace("M = 32", "M = 4096").replace(
        "K = 64", "K = 4096").replace("N = 64", "N = 4096")
    an = syn.analysis(source)
    # seen on the H200: 128x256x64 with 4 stages asked for 288 KiB (limit 227 KiB)
    big = templates.clamp(an, {**templates.default_params(an, "h200", "tf32"),
                               "BLOCK_N": 256, "BLOCK_K": 64, "num_stages": 4})
    assert not templates.fits_shared_memory(an, big, 227 * 1024)
    assert templates.fits_shared_memory(an, {**big, "BLOCK_K": 32}, 227 * 1024)
    parent = node(syn.render(source, {**big, "BLOCK_K": 32}), {**big, "BLOCK_K": 32},
                  bottleneck="compute-bound")
    proposals = syn.propose(request(source, parent), 6, random.Random(0))
    for p in proposals:  # what overflows comes back marked pruned, never to be evaluated
        fits = templates.fits_shared_memory(an, p.params, 227 * 1024)
        assert fits == (not p.pruned), (p.params, p.pruned)
        assert not p.pruned or p.pruned.startswith("pruned.shared_memory")
    assert len([p for p in proposals if not p.pruned]) == 6


def test_a_screening_family_mixes_whole_space_draws_with_the_moves():
    # a screening asks for dozens at once: a quarter of them leave the parent's neighbourhood
    syn = OfflineSynthesizer()
    source = library_source("conv2d_relu")
    an = syn.analysis(source)
    params = family_module(an).default_params(an, "h200", "strict")
    parent = node(syn.render(source, params), params)
    family = syn.propose(request(source, parent), 32, random.Random(0))
    kinds = ["draw" if p.transformation.endswith(":random") else "move" for p in family]
    assert kinds.count("draw") >= 32 // 4 - 2 and kinds.count("move") >= 32 // 2
    assert "draw" in kinds[:8], kinds  # spread through the family, not only where moves end
    assert len({p.source for p in family}) == len(family)
    children = syn.propose(request(source, parent), 3, random.Random(0))  # a step's children
    assert not any(p.transformation.endswith(":random") for p in children)
