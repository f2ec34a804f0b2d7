"""Run one variant problem the way a small-shape search would meet it, in this process.

Each problem is traced on meta tensors (`trace_module`, the same analysis the sandboxed
probe returns), classified, rendered with the family's default parameters for the
interpreter and for the H200 plus random draws of its parameter space, and every rendering
is run under the Triton interpreter on two seeds of the problem's inputs against the
reference in eval mode (as the evaluator runs both). The problems are our own, trusted
code; the product itself never runs a problem outside the sandbox."""

from __future__ import annotations

import random
import sys
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TOLERANCE = 1e-4


def problem(init, forward, inputs, args="x", init_args="", init_inputs="[]", extra="",
            body=""):
    """A KernelBench-format source: `init` lines in __init__, `forward` returned (or `body`,
    indented lines, as the whole forward)."""
    init_lines = "".join(f"        {line}\n" for line in init.splitlines())
    forward_body = body or f"        return {forward}"
    return ("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n" + extra +
            f"class Model(nn.Module):\n    def __init__(self{init_args}):\n"
            f"        super().__init__()\n{init_lines}        pass\n\n"
            f"    def forward(self, {args}):\n{forward_body.rstrip()}\n\n"
            f"def get_inputs():\n    return [{inputs}]\n\n"
            f"def get_init_inputs():\n    return {init_inputs}\n")


def _runner():
    sys.path.insert(0, str(REPO / "tests" / "search_engine" / "synthesis"))
    from conftest import run_candidate, traced_analysis  # the tests' in-process runner

    return run_candidate, traced_analysis


def settings(an, random_draws: int) -> list[tuple[str, dict]]:
    from search_engine.synthesis.offline.synthesizer import family_module

    family = family_module(an)
    out = [("interpreter", family.default_params(an, "interpreter", "strict")),
           ("h200", family.default_params(an, "h200", "strict"))]
    rng = random.Random(0)
    for i in range(random_draws):
        params = family.clamp(an, family.random_params(an, out[0][1], rng))
        if family.valid(an, params):
            out.append((f"random{i}", params))
    return out


def check(source: str, tmp: Path, random_draws: int = 1) -> tuple[str, str, str]:
    """(outcome, family, detail): outcome is ok, not_covered, or the stage that failed."""
    from search_engine.synthesis.base import NotCoveredError
    from search_engine.synthesis.offline.synthesizer import family_module

    run_candidate, traced_analysis = _runner()
    try:
        an = traced_analysis(source)
    except NotCoveredError as refused:
        return "not_covered", "", str(refused)
    except Exception as exc:
        return "analysis_error", "", f"{type(exc).__name__}: {exc}"
    for label, params in settings(an, random_draws):
        try:
            candidate = family_module(an).render(source, an, params)
        except Exception as exc:
            return "render_error", an.family, f"{label}: {type(exc).__name__}: {exc}"
        for seed in (1, 2):
            try:
                expected, got, launched = run_candidate(source, candidate, tmp, seed)
                assert launched, "the candidate launched no kernel"
                assert got.shape == expected.shape and got.dtype == expected.dtype, \
                    f"{tuple(got.shape)} {got.dtype} vs {tuple(expected.shape)} {expected.dtype}"
                _assert_close(got, expected)
            except AssertionError as exc:
                return "mismatch", an.family, f"{label} {params}: {str(exc)[:400]}"
            except Exception as exc:
                return "run_error", an.family, \
                    f"{label}: {type(exc).__name__}: {exc}\n{traceback.format_exc()[-800:]}"
    return "ok", an.family, ""


def _assert_close(got, expected) -> None:
    """fp32 outputs within 1e-4; fp16/bf16 outputs within torch's tolerance for their dtype
    (the reference itself rounds there, a kernel computing in fp32 may differ by an ulp)."""
    import torch

    if expected.dtype in (torch.float16, torch.bfloat16):
        torch.testing.assert_close(got, expected, equal_nan=True)
    else:
        torch.testing.assert_close(got.double(), expected.double(), atol=TOLERANCE,
                                   rtol=TOLERANCE, equal_nan=True)
