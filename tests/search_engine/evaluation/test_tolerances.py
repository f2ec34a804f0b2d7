"""The tolerance table and precision policies."""

import pytest
import torch

from search_engine.evaluation.correctness import compare_trial
from search_engine.evaluation.tolerances import (
    TOLERANCES,
    policy_loosens,
    precision_class,
    tolerance_for,
)


def test_classes_follow_policy_and_dtype():
    assert precision_class("strict", "float32") == "fp32"
    assert precision_class("tf32", "float32") == "tf32"
    assert precision_class("bf16", "float32") == "bf16"
    assert precision_class("strict", "bfloat16") == "bf16"  # dtype wins when looser
    assert precision_class("strict", "float16") == "fp16"
    assert TOLERANCES["fp32"].rel_norm == 1e-5
    assert policy_loosens("tf32", "float32") and not policy_loosens("strict", "float32")


def test_unknown_policy_is_a_clear_error():
    with pytest.raises(ValueError, match="strict, tf32, bf16"):
        precision_class("fast", "float32")


def _tf32_matmul(a, b):
    # round operands to tf32 (10-bit mantissa), accumulate in fp32: what tl.dot does by default
    def to_tf32(t):
        bits = t.view(torch.int32)
        return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)
    return to_tf32(a) @ to_tf32(b)


def test_tf32_gemm_fails_strict_and_passes_tf32():
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(128, 1024, generator=g), torch.randn(1024, 64, generator=g)
    ref = a.double() @ b.double()
    out = _tf32_matmul(a, b)
    strict = compare_trial(0, 0, [out], [ref], ["torch.float32"], tolerance_for("strict", "float32"))
    loose = compare_trial(0, 0, [out], [ref], ["torch.float32"], tolerance_for("tf32", "float32"))
    assert not strict.passed and "relative norm error" in strict.note
    assert loose.passed
    exact = compare_trial(0, 0, [a @ b], [ref], ["torch.float32"], tolerance_for("strict", "float32"))
    assert exact.passed


def test_shape_dtype_and_nan_fail():
    tol = tolerance_for("strict", "float32")
    ref = torch.randn(4, 4, dtype=torch.float64)
    assert "shape" in compare_trial(0, 0, [ref.float().T[:2]], [ref], ["torch.float32"], tol).note
    assert "dtype" in compare_trial(0, 0, [ref.half()], [ref], ["torch.float32"], tol).note
    bad = ref.float().clone()
    bad[0, 0] = float("nan")
    assert "NaN/Inf" in compare_trial(0, 0, [bad], [ref], ["torch.float32"], tol).note
    assert "returned 2 outputs" in compare_trial(0, 0, [ref, ref], [ref], ["torch.float32"], tol).note


def test_degenerate_reference_reasons():
    from search_engine.evaluation.reference import degenerate_reason

    assert "near) zero" in degenerate_reason([torch.zeros(8, dtype=torch.float64)])
    assert "constant" in degenerate_reason([torch.full((8,), 2.5, dtype=torch.float64)])
    assert "NaN" in degenerate_reason([torch.tensor([1.0, float("nan")])])
    assert degenerate_reason([torch.randn(8, dtype=torch.float64)]) == ""


def test_a_reference_beyond_the_native_dtype_is_degenerate():
    """A float64 value that the problem's own dtype cannot hold is one no correct kernel can
    return (it would be inf there); within range, or an integer output, it is fine."""
    from search_engine.evaluation.reference import degenerate_reason

    big = torch.tensor([1e40, 1.0, 2.0], dtype=torch.float64)
    assert "overflows float32" in degenerate_reason([big], ["torch.float32"])
    assert degenerate_reason([big], ["torch.float64"]) == ""
    assert degenerate_reason([big]) == ""  # native dtype unknown: the float64 checks only
    assert "overflows float16" in degenerate_reason([big / 1e35], ["torch.float16"])
    assert "overflows bfloat16" not in degenerate_reason([big / 1e35], ["torch.bfloat16"])
    ints = torch.tensor([1, 2, 3])
    assert degenerate_reason([big, ints], ["torch.float64", "torch.int64"]) == ""
