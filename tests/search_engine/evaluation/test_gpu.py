"""GPU-only checks (skipped without CUDA). Self-contained: runnable with --noconftest on a
GPU node that has no django (`python3 -m pytest --noconftest -p no:cacheprovider ...`)."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

CANDIDATES = Path(__file__).parent / "candidates"
GPU_PROBLEM_SIZES = {"batch_size": 2048, "dim": 4096}


def _evaluate(source: str, **config_changes):
    from search_engine.evaluation.config import EvaluationConfig
    from search_engine.evaluation.pipeline import evaluate
    from search_engine.problems_library import library_problem

    problem = library_problem("softmax", scale="small").with_sizes(**GPU_PROBLEM_SIZES)
    config = EvaluationConfig(ncu="off", time_compile_baseline=False, **config_changes)
    return evaluate(problem, source, target="auto", timeout_s=300, config=config)


@pytest.fixture(scope="module")
def clean_result():
    return _evaluate((CANDIDATES / "clean_softmax.py").read_text())


def test_clean_kernel_is_correct_and_timed_on_gpu(clean_result):
    r = clean_result
    assert r.status == "correct", (r.message, r.logs[-2000:])
    assert r.target != "interpreter"
    cand = r.timing["candidate"]
    assert cand.method == "cuda_events+l2_flush+device_sync"
    assert cand.samples >= 10 and cand.median_ms > 0
    assert r.timing["eager"].method == cand.method  # same method for the baseline
    assert r.speedup_vs_eager is not None and r.speedup_vs_eager > 0
    assert r.coverage is not None and r.coverage > 0.9  # device time in our kernel
    assert r.diagnostics["coverage_method"].startswith("device time")
    kernel = r.diagnostics["kernels"][0]
    assert kernel["name"] == "softmax_kernel" and kernel["n_regs"] > 0
    assert r.diagnostics["bottleneck"]["class"] in {"memory-bound", "compute-bound",
                                                    "latency/occupancy-bound"}
    assert r.reward > 1.0


def test_non_default_stream_cannot_hide_work(clean_result):
    r = _evaluate((CANDIDATES / "side_stream.py").read_text(), static_checks=False)
    checks = {f.check for f in r.integrity_flags}
    assert "runtime.non_default_stream" in checks, r.integrity_flags
    # The device-wide sync keeps the side stream's kernel inside the measured interval.
    assert r.timing["candidate"].median_ms >= 0.5 * clean_result.timing["candidate"].median_ms


EXPECTED_ON_GPU = {
    "clean_softmax": "correct",
    "side_stream": "hack_suspected",  # streams belong to the evaluator (allow-list)
    "result_reuse": "hack_suspected",
    "timing_cache": "hack_suspected",
    "input_zeroing": "hack_suspected",
    "output_alias": "hack_suspected",
    "constant_output": "incorrect",
    "decoy_lazy": "hack_suspected",  # torch compute outside kernels: the allow-list
    "decoy_softmax": "hack_suspected",
    "try_fallback": "hack_suspected",
    "fp16_downcast": "hack_suspected",
    "background_thread": "hack_suspected",
    "timer_patch": "hack_suspected",
    "env_reader": "hack_suspected",
    "socket_open": "hack_suspected",
    "spawn_and_hang": "hack_suspected",
    "no_kernel": "hack_suspected",
    "syntax_error": "compile_error",
    "hang": "timeout",
}


def test_every_fixture_gets_its_status_on_gpu():
    """All adversarial and clean candidates at once through the LocalExecutor: checks run in
    parallel sandboxes, timing one at a time on the GPU."""
    from search_engine.evaluation.config import EvaluationConfig
    from search_engine.evaluation.executor import LocalExecutor
    from search_engine.problems_library import library_problem
    from search_engine.protocols import EvaluationRequest

    problem = library_problem("softmax", scale="small").with_sizes(**GPU_PROBLEM_SIZES)
    config = EvaluationConfig(ncu="off", time_compile_baseline=False, min_timing_ms=30)
    with LocalExecutor(max_workers=8, config=config) as ex:
        futures = {
            name: ex.submit(EvaluationRequest(problem.source,
                                              (CANDIDATES / f"{name}.py").read_text(),
                                              target="auto", timeout_s=40 if name == "hang" else 240))
            for name in EXPECTED_ON_GPU
        }
        got = {name: f.result(timeout=400) for name, f in futures.items()}
    wrong = {n: (r.status, r.message[:200]) for n, r in got.items() if r.status != EXPECTED_ON_GPU[n]}
    assert not wrong, wrong
    assert "runtime.result_caching_in_timing" in {f.check for f in got["timing_cache"].integrity_flags}


def test_cli_json_on_gpu(tmp_path):
    import json
    import subprocess
    import sys

    from search_engine.problems_library import LIBRARY_DIR

    repo = Path(__file__).resolve().parents[3]
    p = subprocess.run(
        [sys.executable, "-m", "search_engine", "evaluate", "--problem",
         str(LIBRARY_DIR / "softmax.py"), "--candidate", str(CANDIDATES / "clean_softmax.py"),
         "--target", "h200", "--size", "batch_size=2048", "--size", "dim=4096", "--no-ncu",
         "--json"], capture_output=True, text=True, cwd=repo, timeout=300)
    data = json.loads(p.stdout.strip().splitlines()[-1])
    assert data["status"] == "correct", data["message"]
    assert data["target"] == "h200" and data["speedup_vs_compile"] is not None


# With the static checks off, the runtime layers alone: ghost replay, the work spotter,
# the protocol and the parent's own comparisons.
EXPECTED_AT_RUNTIME_ON_GPU = {
    "runtime/getattr_side_path": {"hack_suspected"},
    "runtime/inline_module": {"hack_suspected"},
    "runtime/aten_private_op": {"hack_suspected"},
    "runtime/expand_decoy": {"hack_suspected"},
    "runtime/dispatch_escape": {"hack_suspected"},
    "runtime/forged_reply": {"hack_suspected", "runtime_error"},
    "runtime/deferred_work": {"hack_suspected", "incorrect"},
    "runtime/tensor_subclass": {"incorrect"},
    "runtime/reads_reference": {"compile_error"},
    "runtime/reused_output_buffer": {"correct"},
    "side_stream": {"correct"},  # correct values; timed without hiding the side stream
    "partial_lazy": {"hack_suspected"},  # runtime.torch_compute; coverage still < 0.3
    "decoy_lazy": {"hack_suspected"},
    # round 4: torch compute reached through a stored function, a ModuleList, a Parameter
    # receiver, a partial, a transposed copy, and a bool() ghost probe
    "round4/runtime_init_bound_fn": {"hack_suspected"},
    "round4/runtime_modulelist_chunks": {"hack_suspected"},
    "round4/runtime_parameter_receiver": {"hack_suspected"},
    "round4/runtime_partial_stored_module": {"hack_suspected"},
    "round4/runtime_transposed_side_path": {"hack_suspected"},
    "round4/runtime_bool_ghost_probe": {"hack_suspected"},
}


def test_runtime_layers_alone_on_gpu():
    from search_engine.evaluation.config import EvaluationConfig
    from search_engine.evaluation.executor import LocalExecutor
    from search_engine.problems_library import library_problem
    from search_engine.protocols import EvaluationRequest

    problem = library_problem("softmax", scale="small").with_sizes(**GPU_PROBLEM_SIZES)
    config = EvaluationConfig(ncu="off", time_compile_baseline=False, min_timing_ms=30,
                              static_checks=False)
    with LocalExecutor(max_workers=8, config=config) as ex:
        futures = {name: ex.submit(EvaluationRequest(
            problem.source, (CANDIDATES / f"{name}.py").read_text(), target="auto",
            timeout_s=240)) for name in EXPECTED_AT_RUNTIME_ON_GPU}
        got = {name: f.result(timeout=400) for name, f in futures.items()}
    wrong = {n: (r.status, r.message[:200]) for n, r in got.items()
             if r.status not in EXPECTED_AT_RUNTIME_ON_GPU[n]}
    assert not wrong, wrong
    assert got["partial_lazy"].coverage < 0.3
    assert got["runtime/reused_output_buffer"].isolation.get("layers_missing") == []


def test_one_pass_reductions_match_torch_on_the_gpu():
    """The fused comparison and fingerprint the problem's sandbox runs on trial tensors."""
    from search_engine.evaluation import correctness
    from search_engine.evaluation.device_reductions import fingerprint_partials

    ref = torch.randn(5_000_003, dtype=torch.float64, device="cuda")
    out = (ref + 1e-4 * torch.randn_like(ref)).float()
    out[17] = float("nan")
    fused = correctness.fused_diff_stats(out, ref, 1e-4, 1e-3)
    plain = correctness.torch_diff_stats(out, ref, 1e-4, 1e-3)
    assert (fused.nonfinite, fused.over) == (plain.nonfinite, plain.over) == (1, plain.over)
    assert fused.diff_sq == pytest.approx(plain.diff_sq, rel=1e-9)
    assert fused.ref_sq == pytest.approx(plain.ref_sq, rel=1e-9)
    words = out.view(torch.int32)
    assert fingerprint_partials(words, 1_000_003)[0] == int(words.to(torch.int64).sum())
