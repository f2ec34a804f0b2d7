"""Skills ablation: do distilled skills save evaluations on new shapes of the same family?

    python benchmarks/skills_ablation.py [--target interpreter|h200] [--scale tiny|gpu]
        [--families softmax,layernorm,elementwise,gemm,conv] [--seeds 0,1] [--budget 10]
        [--distil-budget 12] [--skills FILE] [--skills-out FILE] [--json-out FILE]

1. Distil: for each family, an offline search on one problem (the library problem at the
   `distil` sizes) whose successful steps become skills (`skill_priors.distil_priors`, the
   knowledge base's rule: positive TRLOO advantage, speedup over eager > 1, clean). They
   are written to a JSON skills file (`--skills-out`); `--skills FILE` skips this step and
   reads skills from a file instead (a GPU node needs neither Django nor Chroma).
2. Ablate: fresh searches on *other* sizes of the same families, without skills and with
   them, under the same seeds, budget and strategy. Reported per problem and seed:
   evaluations the no-skill search needed to reach its final best, evaluations the skill
   search needed to reach that same value (within `--tolerance`), both final bests, and how
   the skills' uses were scored (helped: the node beat its parent).

On the H200 (`--target h200`) every value is a measured speedup vs eager PyTorch. On the
CPU interpreter, timings mean nothing, so correctness is real (each candidate runs in the
interpreter sandbox) and correct candidates are ranked by a documented proxy,
`proxy_time_us` (ablation_proxy.py): an analytical model of the offline template's
parameters on a small GPU (4 SMs with an H200's per-SM bandwidth and FLOP/s, so tiny problems
fill it as GPU-sized ones fill an H200): memory traffic over bandwidth derated by vector width
per thread and by parallelism, launch and per-program costs; tiles, stages and split-K for
GEMMs) against a vendor-like baseline. It
is deterministic and its optimum moves with the shape, which is all an ablation of search
order needs; its numbers are not GPU speedups and are labelled `proxy`.

Needs only torch, triton and numpy (search_engine; no Django).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.ablation_proxy import (  # noqa: E402
    ProxyExecutor, proxy_eager_us, proxy_time_us, template_params,
)

# Also the proxy's names, which callers import from here.
__all__ = ["FAMILIES", "problem", "values", "evals_to_reach", "best", "search", "distil",
           "ablate", "compare", "format_row", "summary", "main", "ProxyExecutor",
           "proxy_eager_us", "proxy_time_us", "template_params"]

LIBRARY = ROOT / "search_engine" / "problems_library"
# family: (library file, {scale: (distil sizes, [target sizes, ...])})
FAMILIES = {
    "softmax": ("softmax.py", {
        "tiny": ({"batch_size": 32, "dim": 256}, [{"batch_size": 8, "dim": 1024}]),
        "gpu": ({"batch_size": 4096, "dim": 4096},
                [{"batch_size": 16384, "dim": 1024}, {"batch_size": 1024, "dim": 16384}])}),
    "layernorm": ("layernorm.py", {
        "tiny": ({"batch_size": 32, "hidden": 256}, [{"batch_size": 8, "hidden": 1024}]),
        "gpu": ({"batch_size": 4096, "hidden": 4096},
                [{"batch_size": 16384, "hidden": 1024}, {"batch_size": 2048, "hidden": 8192}])}),
    "elementwise": ("scale_bias_gelu_residual.py", {
        "tiny": ({"batch_size": 16, "hidden": 256}, [{"batch_size": 8, "hidden": 256}]),
        "gpu": ({"batch_size": 4096, "hidden": 4096},
                [{"batch_size": 16384, "hidden": 8192}, {"batch_size": 1024, "hidden": 1024}])}),
    "gemm": ("gemm_bias_relu.py", {
        "tiny": ({"M": 64, "K": 128, "N": 96}, [{"M": 32, "K": 64, "N": 128}]),
        "gpu": ({"M": 4096, "K": 4096, "N": 4096},
                [{"M": 8192, "K": 2048, "N": 8192}, {"M": 1024, "K": 8192, "N": 2048}])}),
    # a family whose measured default is not its best (a 3-minute search found 1.13x the
    # default on the 64-channel conv), so skills have evaluations to save
    "conv": ("conv2d_relu.py", {
        "tiny": ({"batch_size": 2, "channels": 4, "size": 8},
                 [{"batch_size": 1, "channels": 8, "size": 8}]),
        "gpu": ({"batch_size": 16, "channels": 64, "size": 256},
                [{"batch_size": 8, "channels": 128, "size": 128},
                 {"batch_size": 32, "channels": 32, "size": 256}])}),
}


def problem(family: str, sizes: dict):
    from search_engine.problems import Problem

    name, _ = FAMILIES[family]
    base = Problem.from_file(LIBRARY / name)
    return base.with_sizes(**sizes)


# -- searches ---------------------------------------------------------------------------------

def values(nodes: list[dict]) -> list[float | None]:
    """The value of each evaluated candidate in evaluation (creation) order: its speedup
    when correct and untainted, else None."""
    from search_engine.search.skill_priors import integrity_is_clean, node_flags

    out = []
    for node in sorted(nodes, key=lambda n: n["id"]):
        if node["parent_id"] is None or node["status"] in ("pending", "cancelled"):
            continue
        clean = node["status"] == "correct" and integrity_is_clean(node_flags(node))
        out.append(node["speedup_vs_eager"] if clean else None)
    return out


def evals_to_reach(vals: list[float | None], target: float) -> int | None:
    for i, v in enumerate(vals, start=1):
        if v is not None and v >= target:
            return i
    return None


def best(vals: list[float | None]) -> float | None:
    known = [v for v in vals if v is not None]
    return max(known) if known else None


def search(prob, target: str, executor, synthesizer, args, seed: int, budget: int, skills):
    from search_engine.search import SearchConfig, SearchRunner
    from search_engine.search.skill_priors import SkillGuide

    config = SearchConfig(strategy=args.strategy, budget=budget, seed=seed,
                          children_per_step=2, max_in_flight=4,
                          family=prob.family, max_seconds=args.session_seconds,
                          precision_policy="strict")
    guide = SkillGuide(skills or [], max_children=args.skill_children)
    return SearchRunner(prob.source, target, synthesizer, executor, config, skills=guide).run()


def distil(args, make_executor) -> "object":
    from search_engine.search.skill_priors import SkillLibrary, distil_priors, shape_class
    from search_engine.synthesis.offline import OfflineSynthesizer

    priors = []
    for family in args.families:
        distil_sizes, _ = FAMILIES[family][1][args.scale]
        prob = problem(family, distil_sizes)
        synth = OfflineSynthesizer()
        executor = make_executor(synth)
        try:
            outcome = search(prob, args.target, executor, synth, args, args.distil_seed,
                             args.distil_budget, None)
        finally:
            executor.shutdown()
        found = distil_priors(outcome.nodes, family=prob.family, hardware=args.target,
                              shape_class=shape_class(synth.analysis(prob.source)),
                              prefix=f"{family}-")
        print(f"distil {family:12s} {distil_sizes}: best {best(values(outcome.nodes))}, "
              f"{len(found)} skill(s): " + ", ".join(f"{p.transformation} {p.speedup:.2f}x"
                                                     for p in found), flush=True)
        priors += found
    return SkillLibrary(priors)


def out_of_time(args) -> bool:
    return args.deadline_s is not None and time.monotonic() - args.started > args.deadline_s


def ablate(args, library, make_executor) -> list[dict]:
    from search_engine.search.skill_priors import skill_uses, shape_class
    from search_engine.synthesis.offline import OfflineSynthesizer

    rows = []
    for family in args.families:
        for sizes in FAMILIES[family][1][args.scale][1][:args.targets]:
            prob = problem(family, sizes)
            synth = OfflineSynthesizer()
            matching = library.matching([prob.family], args.target,
                                        shape_class(synth.analysis(prob.source)))
            executor = make_executor(synth)
            try:
                for seed in args.seeds:
                    if out_of_time(args):
                        print(f"deadline of {args.deadline_s:g} s reached: stopping", flush=True)
                        return rows
                    arms = {}
                    for arm, skills in (("none", []), ("skills", matching)):
                        t0 = time.monotonic()
                        outcome = search(prob, args.target, executor, synth, args, seed,
                                         args.budget, skills)
                        arms[arm] = (values(outcome.nodes), skill_uses(outcome.nodes),
                                     time.monotonic() - t0)
                    rows.append(compare(family, sizes, seed, arms, args.tolerance,
                                        len(matching)))
                    print(format_row(rows[-1]), flush=True)
                    if args.json_out:
                        Path(args.json_out).write_text(json.dumps(rows, indent=1))
            finally:
                executor.shutdown()
    return rows


def compare(family, sizes, seed, arms, tolerance, skills_matching) -> dict:
    plain, plain_uses, plain_s = arms["none"]
    skilled, uses, skilled_s = arms["skills"]
    plain_best, skilled_best = best(plain), best(skilled)
    need = evals_to_reach(plain, plain_best) if plain_best is not None else None
    reach = evals_to_reach(skilled, plain_best * (1 - tolerance)) \
        if plain_best is not None else None
    return {
        "family": family, "sizes": sizes, "seed": seed, "skills_matching": skills_matching,
        "evals_none": len(plain), "evals_skills": len(skilled),
        "none_evals_to_its_best": need, "skills_evals_to_none_best": reach,
        "ratio": round(reach / need, 3) if need and reach else None,
        "best_none": plain_best, "best_skills": skilled_best,
        "skills_not_worse": plain_best is None or (
            skilled_best is not None and skilled_best >= plain_best * (1 - tolerance)),
        "skill_uses": len(uses), "skill_uses_helped": sum(u.helped for u in uses),
        "seconds": [round(plain_s, 1), round(skilled_s, 1)],
    }


def format_row(r: dict) -> str:
    sizes = ",".join(f"{k}={v}" for k, v in r["sizes"].items())
    def fmt(v) -> str:
        return "–" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))

    return (f"{r['family']:12s} {sizes:28s} seed {r['seed']}: no-skill best {fmt(r['best_none'])}"
            f" at eval {fmt(r['none_evals_to_its_best'])}; with skills reached it at eval "
            f"{fmt(r['skills_evals_to_none_best'])} (ratio {fmt(r['ratio'])}), final best "
            f"{fmt(r['best_skills'])}; skill uses {r['skill_uses']} "
            f"(helped {r['skill_uses_helped']})")


def summary(rows: list[dict]) -> str:
    by_problem: dict[str, list[dict]] = {}
    for r in rows:
        by_problem.setdefault(f"{r['family']} {r['sizes']}", []).append(r)
    saving = sum(1 for rs in by_problem.values()
                 if statistics.median([r["ratio"] if r["ratio"] is not None else math.inf
                                       for r in rs]) <= 0.5)
    worse = [r for r in rows if not r["skills_not_worse"]]
    ratios = [r["ratio"] for r in rows if r["ratio"] is not None]
    median = statistics.median(ratios) if ratios else "–"
    return (f"problems where skills reach the no-skill best in <= 50% of its evaluations "
            f"(median over seeds): {saving}/{len(by_problem)}; runs ending worse with skills: "
            f"{len(worse)}/{len(rows)}; median ratio {median}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="interpreter")
    parser.add_argument("--scale", choices=["tiny", "gpu"], default=None,
                        help="problem sizes (default: tiny on the interpreter, gpu otherwise)")
    parser.add_argument("--families", default="softmax,layernorm,elementwise,gemm")
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--budget", type=int, default=10)
    parser.add_argument("--distil-budget", type=int, default=12)
    parser.add_argument("--distil-seed", type=int, default=100)
    parser.add_argument("--strategy", default="mcts")
    parser.add_argument("--parallel", type=int, default=2, help="evaluations in flight")
    parser.add_argument("--skill-children", type=int, default=4)
    parser.add_argument("--tolerance", type=float, default=None,
                        help="reaching within this fraction counts (default 0 proxy, 0.03 GPU)")
    parser.add_argument("--session-seconds", type=float, default=None)
    parser.add_argument("--targets", type=int, default=None,
                        help="target shapes per family (default: all of the scale's)")
    parser.add_argument("--deadline-s", type=float, default=None,
                        help="start no new ablation pair after this many seconds")
    parser.add_argument("--skills", help="read skills from this JSON file (skip distilling)")
    parser.add_argument("--skills-out", help="write the distilled skills to this JSON file")
    parser.add_argument("--json-out", help="write the per-run rows to this JSON file")
    args = parser.parse_args(argv)
    args.families = [f for f in args.families.split(",") if f]
    unknown = [f for f in args.families if f not in FAMILIES]
    if unknown:
        parser.error(f"unknown families {unknown}; choose from {', '.join(FAMILIES)}")
    args.seeds = [int(s) for s in args.seeds.split(",") if s]
    interpreter = args.target == "interpreter"
    args.scale = args.scale or ("tiny" if interpreter else "gpu")
    if args.tolerance is None:
        args.tolerance = 0.0 if interpreter else 0.03

    from search_engine.evaluation.config import EvaluationConfig
    from search_engine.evaluation.executor import LocalExecutor
    from search_engine.search.skill_priors import SkillLibrary

    # ncu off: its profiles are not needed to rank and would dominate the GPU time
    config = EvaluationConfig(ncu="off", interpreter_reps=1) if interpreter else \
        EvaluationConfig(ncu="off")

    def make_executor(synth):
        return ProxyExecutor(LocalExecutor(max_workers=args.parallel, config=config), synth,
                             proxy=interpreter)

    t0 = args.started = time.monotonic()
    library = SkillLibrary.load(args.skills) if args.skills else distil(args, make_executor)
    if args.skills_out:
        library.save(args.skills_out)
    print(f"{len(library.priors)} skill(s); ablating on {args.target} "
          f"({'proxy ranking' if interpreter else 'measured speedups'}), seeds {args.seeds}, "
          f"budget {args.budget}", flush=True)
    rows = ablate(args, library, make_executor)
    print(summary(rows))
    print(f"total {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
