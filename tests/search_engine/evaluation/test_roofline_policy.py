"""The roofline's compute floor follows the precision policy: a strict fp32 GEMM may run on
tensor cores (3xTF32 / bf16x3), so a kernel faster than the SIMT fp32 floor is not
impossible; a kernel faster than what any accepted arithmetic allows still is."""

from __future__ import annotations

import pytest

from search_engine.evaluation.diagnostics import roofline
from search_engine.evaluation.integrity.runtime_checks import check_roofline
from search_engine.hardware import (
    POLICY_ARITHMETIC, arithmetic_tflops, compute_ceiling, get_target,
)

H200 = get_target("h200")
N = 4096
FLOPS = 2 * N ** 3                     # a 4096^3 fp32 GEMM
BYTES = 3 * N * N * 4                  # A, B and C once
SLACK = 0.8                            # EvaluationConfig.roofline_slack


def _flags(candidate_ms: float, precision_class: str) -> list:
    roof = roofline(H200, BYTES, FLOPS, precision_class, candidate_ms)
    return check_roofline(candidate_ms, roof["floor_ms"], SLACK)


def test_h200_rates_derive_from_the_measured_bf16_rate():
    assert arithmetic_tflops(H200, "bf16") == 790.0
    assert arithmetic_tflops(H200, "tf32") == pytest.approx(395.0)
    assert arithmetic_tflops(H200, "tf32x3") == pytest.approx(395.0 / 3)
    assert arithmetic_tflops(H200, "bf16x3") == pytest.approx(790.0 / 3)
    assert compute_ceiling(H200, "fp32") == (pytest.approx(790.0 / 3), "bf16x3")
    assert compute_ceiling(H200, "tf32") == (pytest.approx(395.0), "tf32")
    assert compute_ceiling(H200, "bf16")[0] == 790.0
    assert set(POLICY_ARITHMETIC) == {"fp32", "tf32", "fp16", "bf16"}


def test_a_strict_3xtf32_gemm_below_the_simt_floor_is_not_flagged():
    simt_floor_ms = FLOPS / (H200.fp32_tflops * 1e12) * 1e3          # 2.05 ms
    tensor_floor_ms = FLOPS / (arithmetic_tflops(H200, "tf32x3") * 1e12) * 1e3  # 1.04 ms
    candidate_ms = 1.2  # 115 TFLOP/s: what a good 3xTF32 kernel reaches on the H200
    assert candidate_ms < SLACK * simt_floor_ms  # the old SIMT floor called it impossible
    assert candidate_ms > tensor_floor_ms
    assert _flags(candidate_ms, "fp32") == []
    roof = roofline(H200, BYTES, FLOPS, "fp32", candidate_ms)
    assert roof["peak_arithmetic"] == "bf16x3" and roof["pct_peak_flops"] < 100


def test_skipped_work_is_still_flagged_under_every_policy():
    # 0.05 ms for a 4096^3 GEMM is 2750 TFLOP/s: more than any arithmetic of the H200
    for precision_class in ("fp32", "tf32", "bf16"):
        flags = _flags(0.05, precision_class)
        assert [f.check for f in flags] == ["roofline.impossible_speedup"], precision_class


def test_tf32_floor_is_tighter_than_bf16():
    # 0.25 ms is 550 TFLOP/s: possible in bf16, not in tf32
    assert [f.check for f in _flags(0.25, "tf32")] == ["roofline.impossible_speedup"]
    assert _flags(0.25, "bf16") == []
