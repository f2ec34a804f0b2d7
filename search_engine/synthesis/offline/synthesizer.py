"""The offline synthesizer: templates plus diagnosis-driven transformations, no LLM.

The top of a compiler whose layers import only downward: `analyze` (the frontend, traced in
the sandbox, then classified) → `plan/` (which kernels: `planned`) → `writers/` (Triton
source) → `spaces/` (parameters, defaults, moves, resource limits) → this module.

- Expanding the root (or a restart) proposes the family's default parameters, then random
  points of the template's space.
- Expanding a node moves its parameters: the moves tried first depend on the node's diagnosis
  (a failure shrinks tiles and warps; memory-bound grows the work per program; compute-bound
  grows tiles and stages; latency-bound lowers warps or splits K).
- Crossover (evolution) takes each parameter from one of two parents.
- A family asked for at once (a screening's dozens) is not only the parent's neighbourhood:
  a quarter of it is random points of the whole space, so a screening can leave a poor
  default's basin (on the H200, 16 unscreened evaluations found a better random conv
  configuration than 108 screened neighbours).

Everything random comes from the `rng` the search passes in, so a seed gives the same tree.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from search_engine.synthesis.base import NotCoveredError, Proposal, SynthesisRequest
from search_engine.synthesis.offline.analyze import analyze
from search_engine.synthesis.offline.frontend.ir import Analysis
from search_engine.synthesis.offline.plan.gemm_epilogue import planned, prepared_variant
from search_engine.synthesis.offline.plan.kernel_plan import KernelPlan, kernel_plan
from search_engine.synthesis.offline.spaces import staged, templates
from search_engine.synthesis.offline.spaces.dot_precision import (MORE_ACCURATE, next_rung,
                                                                  precision_fallback)
from search_engine.synthesis.offline.writers import travel

WIDE_FAMILY = 16  # from this many proposals a family mixes in whole-space draws
WHOLE_SPACE_SHARE = 4  # one proposal in this many is a whole-space draw

# family name -> its space module, which names its writer too (render, default_params, clamp,
# valid, random_params, ordered_moves, apply_move, fits_shared_memory, resource_problem, notes)
FAMILY_MODULES = {"elementwise": templates, "rows": templates, "matmul": templates,
                  **{family: staged for family in staged.FAMILIES}}


def climbed_precision(parent_params: dict[str, Any],
                      candidates: list[tuple[str, dict[str, Any]]]) -> list:
    """Children of a parent that missed its tolerance, each on the next rung of the dot
    precision ladder (dot_precision.py) unless it climbs further itself. A screening's spot
    check runs one trial: a tf32 sibling passes it and then misses the trial that failed its
    parent (on the H200, Conv2d+InstanceNorm under tf32 fails only the shifted trial), so a
    family left at the parent's precision spends its full evaluations failing again."""
    rung = next_rung(parent_params.get("PRECISION"))
    if rung is None:
        return candidates
    below = MORE_ACCURATE[:MORE_ACCURATE.index(rung)]
    return [(transformation, {**params, "PRECISION": rung})
            if params.get("PRECISION", parent_params["PRECISION"]) in below
            else (transformation, params) for transformation, params in candidates]


def family_module(an: Analysis):
    return FAMILY_MODULES[an.family]


def traveling_render(problem_source: str, an: Analysis, params: dict[str, Any]) -> str:
    """The candidate, taking any batch size where its sizes follow the batch (`travel`).
    At the other batch sizes the parameters are clamped as the family clamps them for a
    problem of that shape: a parameter tied to a size (a row held whole in registers)
    then differs between the renders, so the module keeps its traced shape."""
    def render_one(a: Analysis) -> str:
        module = family_module(a)
        chosen = params if a is an else module.clamp(a, params)
        if a is not an and not module.valid(a, chosen):
            raise NotCoveredError("the parameters do not hold at another batch size")
        return module.render(problem_source, a, chosen)

    return travel.render(render_one, an, prepared_variant)


def checked_render(problem_source: str, an: Analysis, params: dict[str, Any]) -> str:
    """The family writer's source for `params`, compiled (never run) before it is proposed:
    a writer's failure or invalid Python is a refusal naming the writer and the ops, never
    an evaluation spent on a `compile_error`."""
    try:
        source = traveling_render(problem_source, an, params)
    except NotCoveredError:
        raise
    except Exception as exc:
        raise NotCoveredError(f"the offline {an.family} writer failed "
                              f"({type(exc).__name__}: {exc})", list(an.op_names)) from exc
    try:
        compile(source, "<candidate>", "exec")
    except (SyntaxError, ValueError) as exc:
        where = f" at line {exc.lineno}" if getattr(exc, "lineno", None) else ""
        raise NotCoveredError(f"the offline {an.family} writer wrote invalid Python{where} "
                              f"({exc})", list(an.op_names)) from exc
    return source


class OfflineSynthesizer:
    name = "offline"
    supports_crossover = True

    def __init__(self) -> None:
        self._analyses: dict[str, Analysis | NotCoveredError] = {}

    def analysis(self, problem_source: str) -> Analysis:
        """The problem's op graph (cached); raises NotCoveredError for uncovered problems.

        The graph is traced in the sandbox (`analyze.analyze` runs `problem_probe`) and only
        its checked JSON comes back; `CoverageUnknown` (a NotCoveredError) when the sandbox
        gave no usable answer."""
        key = hashlib.sha256(problem_source.encode()).hexdigest()
        if key not in self._analyses:
            try:
                self._analyses[key] = planned(analyze(problem_source))
            except NotCoveredError as exc:
                self._analyses[key] = exc
        found = self._analyses[key]
        if isinstance(found, NotCoveredError):
            raise found
        return found

    def check_covered(self, problem_source: str) -> str:
        """The family this problem falls in; raises NotCoveredError with the ops otherwise,
        also when a target's default kernel cannot be written (the first thing a search
        proposes; its parameters differ per target, so each target's is rendered)."""
        from search_engine.hardware import TARGETS

        an = self.analysis(problem_source)
        for target in TARGETS:
            checked_render(problem_source, an,
                           family_module(an).default_params(an, target, "strict"))
        return an.family

    def kernel_plan(self, problem_source: str) -> KernelPlan:
        """Which kernels the problem becomes (`plan/kernel_plan.py`), read off the cached
        analysis the writers render; NotCoveredError as `analysis` (`refused_plan` turns a
        refusal, `check_covered`'s included, into the plan that says why)."""
        return kernel_plan(self.analysis(problem_source))

    def render(self, problem_source: str, params: dict[str, Any]) -> str:
        """A candidate's source, parsed before anyone sees it; NotCoveredError naming the
        writer and the ops when the writer fails or writes invalid Python."""
        return checked_render(problem_source, self.analysis(problem_source), params)

    def propose(self, request: SynthesisRequest, n: int, rng: random.Random) -> list[Proposal]:
        an = self.analysis(request.problem_source)
        target, policy = request.target.name, request.precision_policy
        parent_params = request.parent.origin.get("params") \
            if request.parent.origin.get("synthesizer") == self.name else None
        diagnosis = templates.diagnosis_class(request.parent.status, request.parent.diagnostics)
        if request.memory.mode == "restart" or not parent_params:
            candidates = self._fresh(an, target, policy, rng, n)
        elif request.second_parent is not None and \
                request.second_parent.origin.get("synthesizer") == self.name:
            candidates = self._crossover(an, parent_params,
                                         request.second_parent.origin["params"], rng, n)
        else:
            candidates = self._moves(an, parent_params, diagnosis, policy, rng, request)
            if n >= WIDE_FAMILY:
                candidates = self._with_whole_space(an, target, policy, rng, n, candidates)
            if request.parent.status == "incorrect":
                candidates = climbed_precision(parent_params, candidates)
        proposals, pruned, seen = [], [], set(request.known_sources)
        refused: NotCoveredError | None = None
        for transformation, params in candidates:
            # a configuration the target cannot hold is never evaluated: a random draw is
            # drawn again, a move's child is shown pruned (`Proposal.pruned`) with the reason
            problem = family_module(an).resource_problem(an, params, request.target)
            if problem and (transformation.endswith(":random") or len(pruned) >= n):
                continue
            try:
                source = checked_render(request.problem_source, an, params)
            except NotCoveredError as exc:  # this point of the space only: never evaluated
                refused = refused or exc
                continue
            if source in seen:
                continue
            seen.add(source)
            move = templates.move_record(transformation, parent_params or {}, params,
                                         request.parent.id, diagnosis)
            notes = f"{family_module(an).notes(an, params)}; {travel.shape_note(source, an)}"
            proposal = Proposal(source=source, transformation=transformation, params=params,
                                notes=notes, move=move, pruned=problem)
            (pruned if problem else proposals).append(proposal)
            if len(proposals) >= n:
                break
        if refused is not None and not proposals and not pruned and not parent_params:
            raise refused  # not even the defaults render: the problem is refused, by name
        return proposals + pruned

    def _fresh(self, an, target, policy, rng, n):
        default = family_module(an).default_params(an, target, policy)
        out = [(f"template:{an.family}", default)]
        for _ in range(8 * n):
            params = family_module(an).clamp(an, family_module(an).random_params(an, default, rng))
            if family_module(an).valid(an, params):
                out.append((f"template:{an.family}:random", params))
        return out

    def _moves(self, an, params, diagnosis, policy, rng, request):
        out = []
        moves = family_module(an).ordered_moves(an, diagnosis, policy, rng, params)
        if request.parent.status == "incorrect":  # a tolerance miss climbs the ladder first
            fallback = precision_fallback(params)
            moves = fallback + [m for m in moves if m not in fallback]
        for move in moves:
            new = family_module(an).apply_move(an, params, move)
            if new is not None:
                out.append((move, new))
        # two moves at once when single moves are exhausted (already in the tree)
        for first, new in list(out):
            for move in family_module(an).ordered_moves(an, diagnosis, policy, rng, new)[:4]:
                twice = family_module(an).apply_move(an, new, move)
                if twice is not None:
                    out.append((f"{first}+{move}", twice))
        if diagnosis == "failure":
            out.append(("reset_defaults", family_module(an).default_params(an, request.target.name,
                                                                   policy)))
        return out

    def _with_whole_space(self, an, target, policy, rng, n, local):
        """`local` (moves) with every WHOLE_SPACE_SHARE-th of the first n a random point of the
        whole space, so a family cut at n holds both; the spare draws follow the moves, to
        fill in where the moves run out or render sources already seen."""
        draws = self._fresh(an, target, policy, rng, n)[1:]  # [0] is the default
        local, quota, mixed = list(local), n // WHOLE_SPACE_SHARE, []
        while local:
            if draws and quota and len(mixed) % WHOLE_SPACE_SHARE == WHOLE_SPACE_SHARE - 1:
                mixed.append(draws.pop(0))
                quota -= 1
            else:
                mixed.append(local.pop(0))
        return mixed + draws

    def _crossover(self, an, first, second, rng, n):
        out = []
        for _ in range(4 * n):
            child = {k: (first[k] if rng.random() < 0.5 else second.get(k, first[k]))
                     for k in first}
            child = family_module(an).clamp(an, child)
            if family_module(an).valid(an, child):
                out.append(("crossover", child))
        return out
