import shutil
"""End to end on the interpreter: clean kernels pass; wrong ones are `incorrect`;
a degenerate reference is a problem defect."""

import pytest

from search_engine.evaluation.config import EvaluationConfig
from search_engine.evaluation.pipeline import evaluate
from search_engine.problems_library import library_problem, library_solution

from .conftest import candidate


def test_clean_softmax_passes_with_interpreter_labels(clean_softmax_result):
    r = clean_softmax_result
    assert r.status == "correct", r.message
    assert len(r.correctness) == 5 and all(t.passed for t in r.correctness)
    assert len({t.seed for t in r.correctness}) == 5
    assert r.timing["candidate"].method == "interpreter"
    assert r.speedup_vs_eager is None and "interpreter" in r.speedup_label  # never compared
    assert r.integrity_flags == []
    # reward: 0.5 + 0.5 * 1.0 (neutral interpreter speedup) + 0.5 * coverage
    assert r.reward == pytest.approx(0.5 + 0.5 + 0.5 * r.coverage)
    assert r.coverage > 0.9
    assert {"backend", "user", "pid_namespace", "mount_namespace", "network_namespace",
            "memory_limit", "layers_missing"} <= set(r.isolation)
    if shutil.which("bwrap"):  # CI installs it: every layer must be there
        assert r.isolation["layers_missing"] == [], r.isolation


@pytest.mark.parametrize("name", ["layernorm", "gemm_bias_relu"])
def test_clean_library_solutions_pass(name):
    r = evaluate(library_problem(name), library_solution(name), target="interpreter",
                 timeout_s=90, config=EvaluationConfig(interpreter_reps=1, ncu="off"))
    assert r.status == "correct", (r.message, r.logs[-1500:])


def test_constant_output_is_incorrect_and_says_so(run_eval):
    r = run_eval(candidate("constant_output"))
    assert r.status == "incorrect"
    assert "runtime.constant_output" in {f.check for f in r.integrity_flags}
    assert r.reward == 0


def test_fp16_downcast_fails_strict_even_without_static_checks(run_eval):
    r = run_eval(candidate("fp16_downcast"), static_checks=False)
    assert r.status == "incorrect", r.message
    assert "relative norm error" in r.message


def test_fp16_downcast_is_a_static_hack(run_eval):
    r = run_eval(candidate("fp16_downcast"))
    assert r.status == "hack_suspected"
    assert "static.precision_downcast" in r.message


def test_degenerate_reference_is_a_problem_defect(softmax_problem, fast_config):
    src = softmax_problem.source.replace("return torch.softmax(x, dim=1)",
                                         "return torch.zeros_like(x)")
    r = evaluate(src, candidate("clean_softmax"), target="interpreter", config=fast_config)
    assert r.status == "problem_defect"
    assert "near) zero" in r.message and r.reward == 0


def test_scaled_trial_catches_naive_softmax(run_eval):
    naive = candidate("clean_softmax").replace("    x = x - tl.max(x, axis=0)\n", "")
    r = run_eval(naive)
    assert r.status == "incorrect"
    failed = [t.trial for t in r.correctness if not t.passed]
    assert 2 in failed  # the x30 trial overflows exp() without max-subtraction


def test_syntax_error_is_compile_error(run_eval):
    r = run_eval(candidate("syntax_error"))
    assert r.status == "compile_error" and "line" in r.message


def test_import_error_is_compile_error_from_the_sandbox(run_eval):
    r = run_eval("import no_such_module_xyz\n" + candidate("clean_softmax"), static_checks=False)
    assert r.status == "compile_error"
    assert "no_such_module_xyz" in r.message


def test_runtime_error_is_reported_with_trial(run_eval):
    src = candidate("clean_softmax").replace("return launch(x.contiguous())",
                                             "raise ValueError('boom')")
    r = run_eval(src)
    assert r.status == "runtime_error" and "trial 0" in r.message and "boom" in r.message


def test_triton_compile_failure_is_compile_error(run_eval):
    broken = candidate("clean_softmax").replace("num = tl.exp(x)", "num = tl.no_such_op(x)")
    r = run_eval(broken)
    assert r.status == "compile_error", (r.status, r.message)
    assert "no_such_op" in r.message or "no_such_op" in r.logs
