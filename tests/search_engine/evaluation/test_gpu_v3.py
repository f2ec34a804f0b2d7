"""Evaluator v3 on the GPU (issue 26, part B: classes 1, 2, 3, 4, 6 and 9; class 5 is
the parent's seeds, the same code on every target, tested on the CPU), device-resident
(the default) and through the parent (`resident="off"`). Skipped without CUDA;
self-contained like `test_gpu.py` (`--noconftest` works on a node without django)."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

ROUND3 = Path(__file__).parent / "candidates" / "round3"
SIZES = {"batch_size": 2048, "dim": 4096}


def source(name: str) -> str:
    """A round-3 candidate as one source (the copy kernel they share prepended)."""
    text = (ROUND3 / f"{name}.py").read_text()
    if text.startswith("# uses: _copy_prelude"):
        text = (ROUND3 / "_copy_prelude.py").read_text() + "\n\n" + text
    return text


def _evaluate(name: str, resident: str, **changes):
    from search_engine.evaluation.config import EvaluationConfig
    from search_engine.evaluation.pipeline import evaluate
    from search_engine.problems_library import library_problem

    problem = library_problem("softmax", scale="small").with_sizes(**SIZES)
    config = EvaluationConfig(ncu="off", time_compile_baseline=False, resident=resident,
                              **changes)
    return evaluate(problem, source(name), target="auto",
                    timeout_s=300, config=config)


HOSTILE = {  # name -> the class it stands for
    "ghost_probe_raise": 1, "ghost_probe_wrong": 1, "ghost_nan_probe": 1,
    "ghost_recorder_attribute": 1, "reshaped_result": 2, "complex_result": 2,
    "decoy_flood": 2, "helper_thread": 3, "aten_named_kernel": 4,
    "host_scalar_max": 6, "harness_patch": 9,
}


@pytest.mark.parametrize("resident", ["auto", "off"])
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_round3_hostile_candidates_are_not_correct_on_gpu(name, resident):
    r = _evaluate(name, resident, static_checks=False)
    assert r.status != "correct", (name, resident, r.status, r.message,
                                   [f.check for f in r.integrity_flags])
    assert r.reward == 0


@pytest.mark.parametrize("resident", ["auto", "off"])
def test_helper_thread_is_named_on_gpu(resident):
    r = _evaluate("helper_thread", resident, static_checks=False)
    assert "runtime.thread_spawn" in {f.check for f in r.integrity_flags}, r.message


def test_aten_kernel_names_do_not_count_as_the_candidates():
    r = _evaluate("aten_named_kernel", "auto", static_checks=False)
    profile = r.diagnostics.get("device_time_us", {})
    assert r.coverage is not None and r.coverage < 0.5, (r.coverage, profile)


@pytest.mark.parametrize("resident", ["auto", "off"])
@pytest.mark.parametrize("name", ["fp_jit_helpers", "fp_two_stage", "fp_persistent_autotune"])
def test_clean_kinds_stay_correct_on_gpu(name, resident):
    r = _evaluate(name, resident)
    assert r.status == "correct", (name, resident, r.message,
                                   [f.check for f in r.integrity_flags])
