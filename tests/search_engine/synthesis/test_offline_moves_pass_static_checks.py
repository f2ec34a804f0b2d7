"""Everything the offline synthesizer can write passes the evaluator's static checks: the
defaults per target and policy, every move (TMA included), two moves at once and random
draws, over the library problems and a sample of every family's variant problems. A move
the evaluator refused would poison every descendant as `hack_suspected`."""

from __future__ import annotations

import importlib
import random

import pytest

from search_engine.evaluation.integrity.static_checks import run_static_checks
from search_engine.problems import load_problem
from search_engine.synthesis.base import NotCoveredError
from search_engine.synthesis.offline.synthesizer import OfflineSynthesizer, family_module

from .conftest import LIBRARY

POLICIES = ("strict", "tf32", "bf16")
DIAGNOSES = ("failure", "memory", "compute", "latency", "unknown")
VARIANT_AREAS = ("matmul", "conv", "rows", "structure")
VARIANTS_PER_AREA = 4  # spread over each area's cases: every family meets the checks


def _sources() -> list[tuple[str, str]]:
    out = [(p.stem, p.read_text()) for p in sorted(LIBRARY.glob("*.py"))
           if not p.name.startswith("_")]
    for area in VARIANT_AREAS:
        cases = importlib.import_module(f"benchmarks.offline_variants.{area}").CASES
        names = sorted(cases)
        step = max(1, len(names) // VARIANTS_PER_AREA)
        out += [(f"{area}:{name}", cases[name]) for name in names[::step][:VARIANTS_PER_AREA]]
    return out


def _configurations(an, fm, target: str, policy: str):
    """(label, params): the default, every move from it and from its TMA twin, two moves
    at once, and random draws: what `propose` can hand the evaluator."""
    base = fm.default_params(an, target, policy)
    starts = [("default", base)]
    tma = fm.apply_move(an, base, "to_tma") if "to_tma" in getattr(fm, "MOVES", {}).get(
        an.family, {}) else None
    if tma is not None and fm.valid(an, tma):
        starts.append(("to_tma", tma))
    yield from starts
    rng = random.Random(0)
    for start_label, start in starts:
        moves = sorted({m for d in DIAGNOSES for m in fm.ordered_moves(an, d, policy, rng, start)})
        for index, move in enumerate(moves):
            child = fm.apply_move(an, start, move)
            if child is None:
                continue
            yield f"{start_label}+{move}", child
            # moves compose (a parameter each): chains from every third move keep the
            # combinations varied at a CPU cost CI can pay
            for second in moves[index % 3::3][:2] if index % 3 == 0 else []:
                grandchild = fm.apply_move(an, child, second)
                if grandchild is not None:
                    yield f"{start_label}+{move}+{second}", grandchild
    for i in range(2):
        yield f"random{i}", fm.clamp(an, fm.random_params(an, base, rng))


@pytest.mark.parametrize("name,source", _sources(), ids=[n for n, _ in _sources()])
def test_every_rendering_passes_the_static_checks(name, source):
    syn = OfflineSynthesizer()
    try:
        an = syn.analysis(source)
    except NotCoveredError:
        pytest.skip("refused by name (not covered)")
    fm = family_module(an)
    dtype = load_problem(source).dtype
    rendered: dict[str, tuple[str, str]] = {}
    for target, policies in (("h200", POLICIES), ("interpreter", ("strict",))):
        for policy in policies:
            for label, params in _configurations(an, fm, target, policy):
                if not fm.valid(an, params):
                    continue
                code = fm.render(source, an, params)
                rendered.setdefault(code, (f"{target}/{policy}/{label}", policy))
    assert rendered
    refused = {}
    for code, (label, policy) in rendered.items():
        hacks = [f"{f.check}: {f.evidence}" for f in run_static_checks(code, dtype, policy)
                 if f.severity != "warning"]
        if hacks:
            refused[label] = hacks[:3]
    assert not refused, refused
