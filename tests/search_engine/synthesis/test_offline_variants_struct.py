"""Elementwise ops and model structure the tracer reads: every KernelBench activation with its
parameters (as F.*, torch.*, tensor methods and nn modules), in-place forms, pow / fmod /
remainder with tensor operands, casts, tensors the forward creates, chunk / split / unbind;
and the in-place forms whose meaning torch.fx loses are refused, not mistranslated.
Shapes are tiny and odd; kernels run in-process under the interpreter."""

from __future__ import annotations

import pytest

from benchmarks.offline_variants.harness import problem
from search_engine.synthesis.base import NotCoveredError

from .conftest import assert_default_kernel_matches, traced_analysis


local_analysis = traced_analysis


R = "torch.randn(5, 7)"
TWO = "torch.randn(5, 7), torch.randn(5, 7)"
CASES = {
    "shrinks_and_celu": problem("", "F.softshrink(x, 0.4) + F.hardshrink(x, lambd=0.3) "
                                "+ F.tanhshrink(x) + F.celu(x, alpha=1.5)", R),
    "logsigmoid_threshold": problem("", "F.logsigmoid(x * 3) + F.threshold(x, 0.1, 20.0)", R),
    "activation_modules": problem(
        "self.a = nn.CELU(0.8)\nself.b = nn.Softshrink(0.2)\nself.c = nn.Hardshrink(0.25)\n"
        "self.d = nn.LogSigmoid()\nself.e = nn.Threshold(-0.7, 2.0)\nself.f = nn.Tanhshrink()",
        "self.f(self.e(self.d(self.c(self.b(self.a(x * 3))))))", R),
    "prelu_per_channel": problem("self.p = nn.PReLU(3)", "self.p(x) + F.prelu(x, w)",
                                 "torch.randn(2, 3, 5), torch.rand(3)", "x, w"),
    "inplace_methods": problem("", "torch.relu_(x.mul_(2).add_(0.5)).clamp_(max=1.5)", R),
    "inplace_module_reads_input": problem("self.r = nn.ReLU(inplace=True)",
                                          "self.r(x) + F.leaky_relu(x, 0.1, True) + x", R),
    # torch.fx alone traces `x += y` as `x = x + y`, and z would keep the old value
    "augmented_assignment_through_an_alias": problem(
        "", "", TWO, "x, y", body="        z = x\n        x += y\n        x *= 0.5\n"
        "        residual = x\n        x = torch.tanh(x)\n        x -= residual\n"
        "        return z * 2 + x\n"),
    "clamp_tensor_bounds": problem("", "torch.clamp(x, min=y, max=y + 1.0)", TWO, "x, y"),
    "pow_forms": problem("", "torch.pow(x.abs() + 0.1, 1.7) + 2.0 ** x + torch.pow(x, 11) "
                         "+ torch.pow(x, y.round())", "torch.randn(5, 7), torch.randn(5, 7) * 3",
                         "x, y"),
    "fmod_remainder": problem("", "torch.fmod(x * 5, y) + torch.remainder(x * 5, -1.3) + x % 0.7",
                              "torch.randn(5, 7), torch.rand(5, 7) + 0.5", "x, y"),
    "rounding_division": problem("", "torch.div(x * 4, 1.3, rounding_mode='floor') "
                                 "+ torch.div(x * 4, 1.3, rounding_mode='trunc') + (x * 4) // 1.1",
                                 R),
    "log_bases": problem("", "torch.log2(x.abs() + 1) + torch.log10(x.abs() + 1) "
                         "+ torch.exp2(x) + torch.erfc(x)", R),
    "casts_round_like_the_reference": problem(
        "", "(x.half().float() * 2).to(torch.float32) + x.bfloat16().type_as(x)", R),
    "factories": problem("", "x + torch.ones(5, 7, device=x.device) * 3 + torch.full_like(x, 0.5)"
                         " + x.new_full((5, 7), 0.25) + torch.arange(1, 15, 2, device=x.device,"
                         " dtype=x.dtype) * x.dim()", R),
    "glu_rrelu_addc_lerp": problem(
        "self.g = nn.GLU(dim=1)", "self.g(x)[:, :3] + F.glu(x, -1)[:, :3] + F.rrelu(x[:, :3]) "
        "+ torch.addcmul(x[:, :3], y, y, value=0.5) + torch.addcdiv(y, y, y.abs() + 1, value=2.0)"
        " + torch.lerp(y, x[:, 3:], 0.3)", "torch.randn(5, 6), torch.randn(5, 3)", "x, y"),
    "hyperbolic_and_two_operand_math": problem(
        "", "torch.sinh(x) + torch.cosh(x) + torch.tan(x * 0.5) + torch.logaddexp(x, y) "
        "+ torch.hypot(x, y) + torch.xlogy(x.abs(), y.abs() + 0.1)", TWO, "x, y"),
    "logit_frac_nan_to_num_special": problem(
        "", "torch.logit(torch.sigmoid(x * 5), eps=1e-3) + torch.frac(x * 3) "
        "+ torch.nan_to_num(torch.log(x), nan=0.5, neginf=-3.0) + torch.special.expit(x) "
        "+ torch.special.expm1(x)", R),
    "forward_default_arguments": problem("", "x * scale + bias", R, "x, scale=2.0, bias=-1"),
    "chunk_split_unbind": problem("", "torch.chunk(x, 3, dim=-1)[2] - x.split(3, dim=1)[0] "
                                  "+ torch.unbind(x, dim=0)[-1][:3]", "torch.randn(4, 9)"),
}


@pytest.mark.parametrize("target", ["interpreter", "h200"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_variant_kernels_match_the_reference(name, target, tmp_path):
    assert_default_kernel_matches(CASES[name], target, tmp_path, equal_nan=True)


REFUSED = {
    "view_read_after_an_augmented_assignment": (problem(
        "", "", TWO, "x, y", body="        z = x.view(35)\n        x += y\n"
        "        return z.view(5, 7) + 1\n"), "another view"),
    "view_read_after_an_inplace_write": (problem(
        "", "", R, body="        y = x.view(-1)\n        x.mul_(2)\n        return y + 1\n"),
        "another view"),
    "inplace_write_into_a_parameter": (problem(
        "self.w = nn.Parameter(torch.randn(7))", "x * self.w.mul_(1.0)", R), "parameter"),
    "cast_to_an_integer": (problem("", "x.to(torch.int32) * 2", R), "int32"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_forms_the_graph_would_mistranslate_are_refused(name):
    source, reason = REFUSED[name]
    with pytest.raises(NotCoveredError) as refused:
        local_analysis(source)
    assert reason in str(refused.value)
