"""`--travel`: does each variant's generated module run at another batch size? The problem is
traced as the sandboxed probe traces it (its batch and two more), the module rendered with
the interpreter's default parameters, and run at a second batch size (half the problem's,
as the evaluator checks it: `batch_shapes.second_batch`) against the reference.

Outcomes: ``travels`` (takes any batch size and is right at the second one), ``fixed`` (its
kernels keep the traced shape and it refuses another with an error naming it), ``wrong``
(claims any batch size but answers wrongly: a bug), ``reference_fails_there`` (the problem
itself does not run at that batch: the evaluator skips such a second shape), ``no_batch``,
``not_covered`` or the stage that failed."""

from __future__ import annotations

from pathlib import Path

from .harness import _assert_close, _runner

def check_travel(source: str, tmp: Path) -> tuple[str, str, str]:
    import torch

    from search_engine.batch_shapes import inputs_at_batch, leading_batch, second_batch
    from search_engine.synthesis.base import NotCoveredError
    from search_engine.synthesis.offline.writers import travel
    from search_engine.synthesis.offline.synthesizer import family_module, traveling_render

    _runner()  # puts the synthesis tests' conftest on the path
    from conftest import load_problem, traveling_analysis

    try:
        an = traveling_analysis(source)
    except NotCoveredError as refused:
        return "not_covered", "", str(refused)[:200]
    params = family_module(an).default_params(an, "interpreter", "strict")
    candidate = traveling_render(source, an, params)
    problem = load_problem(source)
    torch.manual_seed(1)
    official = list(problem.get_inputs())
    batch = leading_batch(official)
    if batch is None:
        return "no_batch", an.family, ""
    inputs, _ = inputs_at_batch(problem, official, second_batch(batch),
                                draw=lambda: list(problem.get_inputs()))
    model, reference = _models(problem, candidate, tmp)
    copies = lambda: [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]  # noqa
    with torch.no_grad():
        try:
            expected = reference(*copies())
        except Exception as exc:  # noqa: BLE001 - the evaluator skips such a second shape too
            return "reference_fails_there", an.family, f"{type(exc).__name__}: {exc}"[:200]
        try:
            got = model(*copies())
        except ValueError as exc:
            fixed = not travel.takes_any_batch(candidate) and "generated for" in str(exc)
            return ("fixed" if fixed else "run_error"), an.family, str(exc)[:200]
        except Exception as exc:  # noqa: BLE001 - reported, the run goes on
            return "run_error", an.family, f"{type(exc).__name__}: {exc}"[:300]
    try:
        assert got.shape == expected.shape, f"{tuple(got.shape)} vs {tuple(expected.shape)}"
        _assert_close(got, expected)
    except AssertionError as exc:
        return "wrong", an.family, str(exc)[:300]
    return ("travels" if travel.takes_any_batch(candidate) else "fixed_but_ran"), an.family, ""


def _models(problem, candidate: str, tmp: Path):
    import torch
    from conftest import load_candidate

    module = load_candidate(candidate, tmp)
    torch.manual_seed(0)
    reference = problem.Model(*problem.get_init_inputs()).eval()
    torch.manual_seed(0)
    model = module.ModelNew(*problem.get_init_inputs()).eval()
    model.load_state_dict(reference.state_dict())
    return model, reference
