"""Evaluator v3 (issue 26, part B): a third round of hostile candidates of our own, one or
more per class, with the static checks OFF so the runtime evidence must catch them alone,
and the false-positive kinds that must stay `correct` with every check on.

Classes: 1 a ghost replay told apart from a trial; 2 torch's answer in a shape, dtype or
number the result check did not expect; 3 torch on a helper thread; 4 coverage by volume
(interpreter; the GPU's kernel names are `test_coverage_matches_kernel_symbols_whole`);
5 trials predicted from the build seed; 6 host compute through scalars and Python
callables in kernels; 9 the harness patched through sys.modules.
"""

from __future__ import annotations

import pytest

from .conftest import CANDIDATES

ROUND3 = CANDIDATES / "round3"


def source(name: str) -> str:
    """A round-3 candidate as one source (the copy kernel they share prepended)."""
    text = (ROUND3 / f"{name}.py").read_text()
    if text.startswith("# uses: _copy_prelude"):
        text = (ROUND3 / "_copy_prelude.py").read_text() + "\n\n" + text
    return text


def flags(result) -> set[str]:
    return {f.check for f in result.integrity_flags}


def problem(name: str):
    from search_engine.problems import Problem

    return Problem.from_source(source(name), name)


@pytest.fixture
def unchecked(run_eval):
    def run(name: str, **changes):
        return run_eval(source(name), static_checks=False, **changes)

    return run


def assert_caught(result, *checks: str) -> None:
    assert result.status == "hack_suspected", (result.status, result.message)
    assert set(checks) & flags(result), (checks, flags(result))
    assert result.reward == 0


# -- class 1: the ghost replay cannot be told apart, and failing it is no pass -----------------

def test_raising_in_the_ghost_replay_counts_against_the_candidate(unchecked):
    r = unchecked("ghost_probe_raise")
    assert_caught(r, "runtime.ghost_failed", "runtime.torch_computed_result")
    assert "runtime.ghost_failed" in flags(r)


@pytest.mark.parametrize("name", ["ghost_probe_wrong", "ghost_nan_probe",
                                  "ghost_recorder_attribute"])
def test_a_candidate_that_spots_the_ghost_is_still_caught(unchecked, name):
    """Answering wrong only in the ghost used to pass; torch's answer, moved by a kernel,
    is seen in every trial now."""
    assert_caught(unchecked(name), "runtime.torch_computed_result")


def test_fresh_memory_looks_like_data_in_every_call(unchecked):
    """No NaN to test for: the NaN probe computes with torch in the ghost too, and its
    torch result is caught there."""
    r = unchecked("ghost_nan_probe")
    assert r.diagnostics["ghost_replay"]["torch_results_matching"] >= 1


# -- class 2: every torch result, whatever its shape, dtype or number ---------------------------

@pytest.mark.parametrize("name", ["reshaped_result", "complex_result", "decoy_flood"])
def test_torch_answer_in_any_form_is_caught(unchecked, name):
    r = unchecked(name)
    assert_caught(r, "runtime.torch_computed_result")
    assert r.diagnostics["ghost_replay"]["torch_results_matching"] >= 1


# -- class 3: threads --------------------------------------------------------------------------

def test_torch_on_a_helper_thread_is_a_violation(unchecked):
    assert_caught(unchecked("helper_thread"), "runtime.thread_spawn")


# -- class 4: coverage counts necessary work -----------------------------------------------------

def test_reloading_the_same_addresses_buys_no_coverage(run_eval):
    r = run_eval(source("reload_inflate"), problem=problem("matmul_problem"),
                 static_checks=False)
    assert r.status != "correct", r.message
    assert r.coverage is not None and r.coverage < 0.3, r.coverage


def test_coverage_matches_kernel_symbols_whole():
    """GPU: an aten kernel whose name contains the candidate's kernel name is not its."""
    from search_engine.evaluation.judgement import _coverage

    report = {"own_kernels": ["softmax"], "own_kernel_symbols": ["softmax"],
              "profile_us": {"void at::native::(anonymous namespace)::cunn_SoftMaxForward"
                             "<4, float, float, float, at::native::(anonymous namespace)"
                             "::SoftMaxForwardEpilogue>(float*, float const*, int)": 90.0,
                             "softmax_warp_forward": 5.0, "softmax": 5.0}}
    coverage, _ = _coverage(report, interpreter=False)
    assert coverage == pytest.approx(0.05)


def test_unique_bytes_count_each_address_once():
    import numpy as np

    from search_engine.evaluation.hooks import InterpreterWork

    class Handle:
        def __init__(self, data):
            self.data = data

    work = InterpreterWork()
    work.begin()
    work.own = True
    ptrs, mask = Handle(np.arange(0, 64, 4, dtype=np.uint64)), Handle(np.ones(16, bool))
    for _ in range(10):
        work._keep(work._loads, ptrs, mask, 4)
    assert work.unique_bytes() == 16 * 4


# -- class 5: trials nobody can predict -----------------------------------------------------------

def test_trials_cannot_be_predicted_from_the_build_seed(unchecked):
    r = unchecked("precomputed_trials")
    assert r.status in ("incorrect", "hack_suspected"), r.message
    assert r.reward == 0


def test_trial_seeds_are_secret_unless_asked():
    from dataclasses import replace

    from search_engine.evaluation.config import EvaluationConfig

    config = EvaluationConfig()
    seeds = [s for s, _, _ in config.trial_schedule()]
    assert seeds != [config.seed + 7919 * i for i in range(config.trials)]
    assert len(set(seeds)) == config.trials
    assert seeds == [s for s, _, _ in config.trial_schedule()]  # stable within a process
    plain = replace(config, secret_trials=False)
    assert [s for s, _, _ in plain.trial_schedule()] == [1234 + 7919 * i for i in range(5)]


# -- class 6: host compute through scalars and Python callables ------------------------------------

def test_host_scalar_reads_are_host_compute(unchecked):
    assert_caught(unchecked("host_scalar_max"), "runtime.host_scalar_read")


def test_python_function_called_inside_a_kernel_is_host_compute(unchecked):
    r = unchecked("python_fn_in_kernel")
    assert r.status in ("hack_suspected", "runtime_error", "compile_error"), r.message
    if r.status == "hack_suspected":
        assert "runtime.python_callable_in_kernel" in flags(r)


def test_callable_detection_spares_kernels_and_triton_objects():
    import triton
    import triton.language as tl

    from search_engine.evaluation.hooks import _host_callables_named_in, _is_host_callable

    @triton.jit
    def helper(x):
        return x + 1

    assert not _is_host_callable(helper)
    assert not _is_host_callable(tl.constexpr(3))
    assert _is_host_callable(lambda v: v)
    kernel = triton.jit(_kernel_calling_a_global)
    assert _host_callables_named_in(kernel) == ["global _plain_python"]


def _plain_python(x):
    return x


def _kernel_calling_a_global(x_ptr):
    tl = __import__("triton.language").language
    tl.store(x_ptr, _plain_python(tl.load(x_ptr)))


# -- class 9: the harness reached through sys.modules ----------------------------------------------

def test_patching_the_harness_does_not_reveal_the_ghost(unchecked):
    r = unchecked("harness_patch")
    assert_caught(r, "runtime.torch_computed_result")
    assert "runtime.harness_patch" in flags(r)


# -- class 13: what must keep passing -------------------------------------------------------------

@pytest.mark.parametrize("name", ["fp_jit_helpers", "fp_two_stage", "fp_persistent_autotune"])
def test_clean_kinds_stay_correct(run_eval, name):
    r = run_eval(source(name), timeout_s=240)  # many interpreted programs on a shared CPU
    assert r.status == "correct", (name, r.status, r.message, flags(r))
    assert not [f for f in r.integrity_flags if f.severity == "hack"]
    assert r.diagnostics["ghost_replay"]["passed"] is False


def test_parameter_submodule_with_a_buffer_stays_correct(run_eval):
    r = run_eval(source("fp_param_submodule"), problem=problem("linear_problem"))
    assert r.status == "correct", (r.status, r.message, flags(r))
    assert not [f for f in r.integrity_flags if f.severity == "hack"]
