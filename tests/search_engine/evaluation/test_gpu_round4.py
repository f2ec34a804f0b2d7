"""Round 4 (issue 26) on the GPU: torch compute outside the candidate's kernels is caught at
torch's dispatch on the H200 as on the interpreter, device-resident (the default) and
through the parent (`resident="off"`), and the honest kinds that the new watch must not
touch stay `correct` there: an autotuned two-stage softmax (Triton's autotuner times its
configurations with torch ops of its own, which are exempt), a persistent autotuned matmul
and a Linear of the candidate's own Triton modules. Skipped without CUDA; self-contained
like `test_gpu.py` (`--noconftest` works on a node without django)."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

ROUND4 = Path(__file__).parent / "candidates" / "round4"

# torch doing the work by a side path, however the Python reached it (see the CPU test,
# test_round4_runtime.py, for what each one does)
TORCH_SIDE_PATHS = ["init_bound_fn", "modulelist_chunks", "parameter_receiver",
                    "list_laundered_operators", "list_literal_module",
                    "partial_stored_module", "transposed_side_path",
                    "coverage_width_padding"]
HONEST = {"fp_two_stage_autotune": "softmax", "fp_persistent_matmul": "matmul",
          "fp_linear_submodules": "linear"}


def _evaluate(name: str, problem_name: str, resident: str, **changes):
    from search_engine.evaluation.config import EvaluationConfig
    from search_engine.evaluation.pipeline import evaluate
    from search_engine.problems import Problem

    problem = Problem.from_source(
        (ROUND4 / f"runtime_{problem_name}_problem.py").read_text(), problem_name)
    config = EvaluationConfig(ncu="off", time_compile_baseline=False, resident=resident,
                              **changes)
    return evaluate(problem, (ROUND4 / f"runtime_{name}.py").read_text(), target="auto",
                    timeout_s=300, config=config)


def _flags(result) -> set[str]:
    return {f.check for f in result.integrity_flags}


@pytest.mark.parametrize("resident", ["auto", "off"])
@pytest.mark.parametrize("name", TORCH_SIDE_PATHS)
def test_torch_side_paths_are_torch_compute_on_gpu(name, resident):
    r = _evaluate(name, "softmax", resident, static_checks=False)
    assert r.status == "hack_suspected", (name, resident, r.status, r.message, _flags(r))
    assert "runtime.torch_compute" in _flags(r), (name, resident, _flags(r))
    assert r.reward == 0


@pytest.mark.parametrize("resident", ["auto", "off"])
def test_a_bool_ghost_probe_is_a_host_scalar_read_on_gpu(resident):
    r = _evaluate("bool_ghost_probe", "softmax", resident, static_checks=False)
    assert r.status != "correct" and r.reward == 0, (r.status, r.message)
    assert "runtime.host_scalar_read" in _flags(r), _flags(r)


@pytest.mark.parametrize("resident", ["auto", "off"])
@pytest.mark.parametrize("name", sorted(HONEST))
def test_honest_unusual_kernels_stay_correct_on_gpu(name, resident):
    r = _evaluate(name, HONEST[name], resident)
    assert r.status == "correct", (name, resident, r.status, r.message, _flags(r))
    assert not _flags(r) & {"runtime.torch_compute", "runtime.host_scalar_read"}, _flags(r)
