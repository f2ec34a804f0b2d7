"""Runtime integrity checks: each adversarial candidate is caught with evidence."""

from search_engine.evaluation.integrity import runtime_checks as rc

from .conftest import candidate


def checks(result):
    return {f.check for f in result.integrity_flags}


def test_result_reuse_across_inputs(run_eval):
    r = run_eval(candidate("result_reuse"))
    assert r.status == "hack_suspected"
    assert "runtime.result_reuse" in checks(r)
    # The cache holds whichever call came first; the ghost replay sits at a secret place, so the
    # first cached result may belong to an input no trial shares: both forms of evidence name reuse.
    assert ("trial 1 returned the result for trial 0" in r.message
            or "trials 0 and 1 returned identical outputs for different inputs" in r.message)


def test_caching_inside_timed_iterations(run_eval):
    r = run_eval(candidate("timing_cache"))
    assert r.status == "hack_suspected"
    assert "runtime.result_caching_in_timing" in checks(r)
    assert all(t.passed for t in r.correctness)  # the trials alone would not catch it


def test_input_zeroing(run_eval):
    r = run_eval(candidate("input_zeroing"))
    assert r.status == "hack_suspected"
    assert "runtime.input_mutation" in checks(r)
    assert "elements changed" in r.message


def test_output_aliasing_input(run_eval):
    r = run_eval(candidate("output_alias"))
    assert r.status == "hack_suspected"
    assert "runtime.output_aliases_input" in checks(r)


def test_try_except_fallback_at_runtime_shows_no_own_kernel(run_eval):
    r = run_eval(candidate("try_fallback"), static_checks=False)
    assert r.status == "hack_suspected"
    assert "runtime.no_own_kernel_launch" in checks(r)


def test_decoy_kernel_beside_torch_work_is_caught_at_runtime_too(run_eval):
    r = run_eval(candidate("decoy_lazy"), static_checks=False)
    assert r.status == "hack_suspected", r.message
    assert "runtime.ghost_replay" in checks(r)
    assert r.coverage < 0.3 and r.reward == 0
    assert r.diagnostics["coverage_method"].startswith("interpreter")
    assert r.diagnostics["torch_ops_bytes"]


def test_kernel_doing_a_minor_share_beside_torch_compute_is_caught(run_eval):
    """Torch's exp and sums beside a small kernel: the runtime says what the static check
    says (torch compute outside the kernels), and the coverage still shows the share."""
    r = run_eval(candidate("partial_lazy"), static_checks=False)
    assert r.status == "hack_suspected", r.message
    assert "runtime.torch_compute" in checks(r)
    assert r.coverage < 0.3 and r.reward == 0
    assert "exp" in r.diagnostics["torch_ops_bytes"]


def test_lazy_threshold_is_configurable():
    assert rc.coverage_flag(0.25, 0.3, "device time")[0].check == "lazy.low_coverage"
    assert rc.coverage_flag(0.25, 0.2, "device time") == []
    assert rc.coverage_flag(None, 0.3, "device time") == []


def test_roofline_check_flags_impossible_times():
    assert rc.check_roofline(0.01, 0.1, 0.8)[0].check == "roofline.impossible_speedup"
    assert rc.check_roofline(0.09, 0.1, 0.8) == []
    assert rc.check_roofline(None, 0.1, 0.8) == []


def test_wallclock_cross_check():
    report = {"timing": {"candidate": {"median_ms": 0.1, "method": "cuda_events"}},
              "host_median_ms": 5.0}
    assert rc.check_wallclock(report, 3.0)[0].check == "timing.wallclock_mismatch"
    report["host_median_ms"] = 0.15
    assert rc.check_wallclock(report, 3.0) == []


def test_profiler_name_agreement():
    report = {"own_kernels": ["softmax_kernel"], "profile_us": {"softmax_kernel": 10.0}}
    assert rc.check_profiler_kernel_names(report) == []
    report["profile_us"] = {"void at::native::softmax_warp_forward": 10.0}
    assert rc.check_profiler_kernel_names(report)[0].check == "runtime.profiler_kernel_mismatch"


def test_stream_check_needs_evidence_of_other_streams():
    report = {"default_stream": 7, "trials": [{"streams": [7]}]}
    assert rc.check_streams(report) == []
    report["trials"] = [{"streams": [9]}]
    assert rc.check_streams(report)[0].check == "runtime.non_default_stream"


def test_timer_patch_is_caught_at_runtime_too(run_eval):
    r = run_eval(candidate("timer_patch"), static_checks=False)
    assert r.status == "hack_suspected", r.message
    flag = next(f for f in r.integrity_flags if f.check == "runtime.timer_patch")
    assert "torch.cuda.synchronize" in flag.evidence and "elapsed_time" in flag.evidence
