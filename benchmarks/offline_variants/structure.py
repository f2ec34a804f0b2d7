"""Offline-synthesizer variants: elementwise ops and model structure (see benchmarks/offline_variants/__main__.py)."""

from .harness import problem

R = "torch.randn(5, 7)"
R3 = "torch.randn(3, 5, 7)"
C = {}
# activations, F.* / torch.* with parameters
C["relu_F"] = problem("", "F.relu(x)", R)
C["relu6_F"] = problem("", "F.relu6(x * 4)", R)
C["leaky_F_slope"] = problem("", "F.leaky_relu(x, negative_slope=0.2)", R)
C["leaky_F_pos"] = problem("", "F.leaky_relu(x, 0.3)", R)
C["elu_alpha"] = problem("", "F.elu(x, alpha=0.7)", R)
C["selu_F"] = problem("", "F.selu(x)", R)
C["celu_F"] = problem("", "F.celu(x, alpha=1.5)", R)
C["celu_torch"] = problem("", "torch.celu(x)", R)
C["gelu_none"] = problem("", "F.gelu(x, approximate='none')", R)
C["gelu_tanh"] = problem("", "F.gelu(x, approximate='tanh')", R)
C["silu_F"] = problem("", "F.silu(x)", R)
C["mish_F"] = problem("", "F.mish(x)", R)
C["softplus_beta"] = problem("", "F.softplus(x * 10, beta=2.0, threshold=5.0)", R)
C["softsign_F"] = problem("", "F.softsign(x)", R)
C["hardsigmoid_F"] = problem("", "F.hardsigmoid(x * 4)", R)
C["hardswish_F"] = problem("", "F.hardswish(x * 4)", R)
C["hardtanh_F"] = problem("", "F.hardtanh(x, min_val=-0.5, max_val=0.8)", R)
C["hardtanh_pos"] = problem("", "F.hardtanh(x, -0.3, 0.4)", R)
C["tanh_torch"] = problem("", "torch.tanh(x)", R)
C["sigmoid_F"] = problem("", "F.sigmoid(x)", R)
C["logsigmoid_F"] = problem("", "F.logsigmoid(x * 3)", R)
C["tanhshrink_F"] = problem("", "F.tanhshrink(x)", R)
C["softshrink_F"] = problem("", "F.softshrink(x, lambd=0.4)", R)
C["hardshrink_F"] = problem("", "F.hardshrink(x, 0.3)", R)
C["threshold_F"] = problem("", "F.threshold(x, 0.1, 20.0)", R)
C["prelu_param"] = problem("self.a = nn.Parameter(torch.full((1,), 0.25))", "F.prelu(x, self.a)", R)
C["prelu_channels"] = problem("", "F.prelu(x, w)", "torch.randn(2, 3, 5), torch.rand(3)", "x, w")
# nn modules
C["nn_modules_chain"] = problem(
    "self.a = nn.ReLU6()\nself.b = nn.LeakyReLU(0.15)\nself.c = nn.ELU(0.5)\nself.d = nn.CELU(0.8)",
    "self.d(self.c(self.b(self.a(x * 3))))", R)
C["nn_shrinks"] = problem("self.a = nn.Softshrink(0.2)\nself.b = nn.Hardshrink(0.25)\nself.c = nn.Tanhshrink()",
                          "self.c(self.b(self.a(x)))", R)
C["nn_logsigmoid_threshold"] = problem("self.a = nn.LogSigmoid()\nself.b = nn.Threshold(-0.7, 2.0)",
                                       "self.b(self.a(x))", R)
C["nn_prelu"] = problem("self.p = nn.PReLU(3)", "self.p(x)", "torch.randn(2, 3, 5)")
C["nn_prelu_single"] = problem("self.p = nn.PReLU()", "self.p(x)", R)
C["nn_softplus_hardtanh"] = problem("self.a = nn.Softplus(beta=0.5, threshold=3)\nself.b = nn.Hardtanh(-1.5, 1.2)",
                                    "self.b(self.a(x * 3))", R)
C["nn_gelu_tanh_silu"] = problem("self.a = nn.GELU(approximate='tanh')\nself.b = nn.SiLU()\nself.c = nn.Softsign()",
                                 "self.c(self.b(self.a(x)))", R)
# tensor methods, in-place
C["method_relu_clamp"] = problem("", "x.relu().clamp(min=0.1) + x.sigmoid().clamp(max=0.7)", R)
C["method_inplace"] = problem("", "torch.relu_(x.mul_(2).add_(0.5))", R)
C["F_relu_inplace"] = problem("", "F.relu(x * 2 - 1, inplace=True)", R)
C["method_exp_abs_neg"] = problem("", "x.abs().exp().neg().tanh()", R)
C["clamp_tensor_method"] = problem("", "x.clamp(-0.5, 0.5).clamp_(min=-0.2)", R)
C["sub_inplace_div"] = problem("", "x.sub_(1.0).div_(3.0).sqrt_() if False else x.sub(1.0).div_(3.0)", R)
# layout chains
C["view_chain"] = problem("", "torch.relu(x.view(5, 7, 3).reshape(35, 3)).flatten() * 2", "torch.randn(3, 5, 7)")
C["permute_chain"] = problem("", "torch.sigmoid(x.permute(2, 0, 1).contiguous()) + 1", R3)
C["transpose_mid"] = problem("", "x.transpose(0, 1).contiguous().relu() * 3", R3)
C["squeeze_unsqueeze"] = problem("", "x.unsqueeze(0).squeeze(0).unsqueeze(-1).tanh()", R)
C["expand_add"] = problem("", "x.expand(4, 5, 7) + y", "torch.randn(1, 5, 7), torch.randn(4, 5, 7)", "x, y")
C["flatten_start"] = problem("", "torch.flatten(x, 1).exp()", R3)
# where, masked_fill, comparisons
C["where_cmp"] = problem("", "torch.where(x > 0.2, x, y * 0.5)", "torch.randn(5, 7), torch.randn(5, 7)", "x, y")
C["where_scalar"] = problem("", "torch.where(x < 0, torch.zeros_like(x), x)", R)
C["where_scalar_lit"] = problem("", "torch.where(x < 0, 0.0, x)", R)
C["masked_fill"] = problem("", "x.masked_fill(x > 0.5, 0.0)", R)
C["masked_fill_mask_input"] = problem("", "x.masked_fill(m, -1.0)", "torch.randn(5, 7), torch.rand(5, 7) > 0.5", "x, m")
# math
C["sign_exp_log"] = problem("", "torch.sign(x) * torch.log(torch.exp(x).abs() + 1)", R)
C["sqrt_rsqrt"] = problem("", "torch.sqrt(x.abs() + 0.1) + torch.rsqrt(x.abs() + 0.1)", R)
C["pow_float"] = problem("", "torch.pow(x.abs() + 0.1, 1.7)", R)
C["pow_tensor"] = problem("", "torch.pow(x.abs() + 0.1, y)", "torch.randn(5, 7), torch.randn(5, 7)", "x, y")
C["pow_op"] = problem("", "x ** 2 + x ** 3", R)
C["scalar_pow"] = problem("", "2.0 ** x", R)
C["reciprocal"] = problem("", "torch.reciprocal(x.abs() + 0.5)", R)
C["fmod_remainder"] = problem("", "torch.fmod(x * 5, 1.5) + torch.remainder(x * 5, 1.5)", R)
C["fmod_tensor"] = problem("", "torch.fmod(x, y.abs() + 0.5) + x % 0.7", "torch.randn(5, 7), torch.randn(5, 7)", "x, y")
C["min_max_two"] = problem("", "torch.max(x, y) - torch.min(x, y)", "torch.randn(5, 7), torch.randn(5, 7)", "x, y")
C["bcast_n1_1m"] = problem("", "x * y + x", "torch.randn(5, 1), torch.randn(1, 7)", "x, y")
C["bcast_diff_shapes"] = problem("", "torch.relu(x - y)", "torch.randn(3, 5, 7), torch.randn(7)", "x, y")
# dtypes
C["fp16"] = problem("", "torch.relu(x) * 2", "torch.randn(5, 7).half()")
C["bf16"] = problem("", "F.gelu(x) + 1", "torch.randn(5, 7).to(torch.bfloat16)")
C["fp16_mixed"] = problem("", "x.float() * y", "torch.randn(5, 7).half(), torch.randn(5, 7)", "x, y")
# scalar input, init args
C["int_input"] = problem("", "x * k + k", "torch.randn(5, 7), 3", "x, k")
C["init_alpha"] = problem("self.alpha = alpha", "F.elu(x, alpha=self.alpha) * self.alpha", R,
                          init_args=", alpha", init_inputs="[0.6]")
C["init_min_max"] = problem("self.lo = lo\nself.hi = hi", "torch.clamp(x, self.lo, self.hi)", R,
                            init_args=", lo, hi", init_inputs="[-0.3, 0.4]")
# structure
C["sequential"] = problem("self.seq = nn.Sequential(nn.ReLU(), nn.Hardtanh(-0.5, 0.5), nn.Sigmoid())",
                          "self.seq(x)", R)
C["modulelist"] = problem("self.acts = nn.ModuleList([nn.Tanh(), nn.GELU(), nn.Mish()])",
                          "self.acts[2](self.acts[1](self.acts[0](x)))", R)
C["getattr_name"] = problem("self.act = nn.SELU()\nself.name = 'act'", "getattr(self, self.name)(x)", R)
C["buffer"] = problem("self.register_buffer('scale', torch.linspace(0.5, 1.5, 7))", "x * self.scale + 1", R)
C["param_bias"] = problem("self.b = nn.Parameter(torch.randn(7))", "torch.tanh(x + self.b)", R)
C["helper_method"] = problem("", "self.act(x) + self.act(-x)", R,
                             extra="")
C["const_like"] = problem("", "x + torch.ones_like(x) * 2 + torch.full_like(x, 0.5)", R)
C["arange"] = problem("", "x * torch.arange(7, device=x.device, dtype=x.dtype)", R)
C["two_shapes"] = problem("", "torch.sigmoid(a) * b.unsqueeze(1)", "torch.randn(5, 7), torch.randn(5)", "a, b")
C["div_int_scalar"] = problem("", "x / 3 + 7 // 2", R)
C["square_cube"] = problem("", "torch.square(x) + x * x * x", R)
C["sum_of_activations_1d"] = problem("", "torch.sigmoid(x) + torch.tanh(x)", "torch.randn(37)")
C["zero_dim_ok"] = problem("", "x.mean() + x * 0", R)
C["logit_log2"] = problem("", "torch.log2(x.abs() + 1) + torch.log10(x.abs() + 1) + torch.exp2(x)", R)
C["clamp_tensor_bounds"] = problem("", "torch.clamp(x, min=y)", "torch.randn(5, 7), torch.randn(5, 7)", "x, y")
C["sigmoid_mul_inplace_out"] = problem("", "x.sigmoid_().mul(2)", R)
C["nan_to_num_abs"] = problem("", "torch.erf(x) + torch.erfc(x) * 0 + torch.expm1(x) + torch.log1p(x.abs())", R)


def _helper(src):
    return src.replace("    def forward(self, x):", "    def act(self, t):\n        return torch.relu(t) * 2\n\n    def forward(self, x):")


C["helper_method"] = _helper(C["helper_method"])

TUPLE = """import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, inputs):
        return self.go(*inputs) if False else inputs

def get_inputs():
    return [torch.randn(5, 7)]

def get_init_inputs():
    return []
"""
UNPACK = """import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        a, b = x, y
        s = a + b
        d = a - b
        return torch.relu(s) * torch.sigmoid(d)

def get_inputs():
    return [torch.randn(5, 7), torch.randn(5, 7)]

def get_init_inputs():
    return []
"""
CHUNK = problem("", "x.chunk(2, dim=1)[0] * x.chunk(2, dim=1)[1]", "torch.randn(5, 8)")
C["locals_unpack"] = UNPACK
C["chunk"] = CHUNK
C["split_unbind"] = problem("", "torch.relu(x.split(3, dim=1)[1]) + x.unbind(0)[2][:3]", "torch.randn(5, 6)")

# second round: soundness of in-place ops, casts, factories, rounding
MORE = {}
MORE["inplace_module_reads_input"] = problem("self.r = nn.ReLU(inplace=True)", "self.r(x) + x", R)
MORE["inplace_view_read_later"] = """import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = x.view(-1)
        x.mul_(2)
        return y + 1

def get_inputs():
    return [torch.randn(5, 7)]

def get_init_inputs():
    return []
"""
MORE["augmented_assign"] = """import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        z = x
        x += y
        x *= 0.5
        return z - torch.tanh(x)

def get_inputs():
    return [torch.randn(5, 7), torch.randn(5, 7)]

def get_init_inputs():
    return []
"""
MORE["inplace_param_refused"] = problem("self.w = nn.Parameter(torch.randn(7))", "x * self.w.mul_(1.0)", R)
MORE["F_inplace_positional"] = problem("", "F.leaky_relu(x, 0.1, True) + x", R)
MORE["pow_neg_base_int_exp"] = problem("", "torch.pow(x, y.round())", "torch.randn(5, 7), torch.randn(5, 7) * 3", "x, y")
MORE["pow_int_big"] = problem("", "torch.pow(x, 11) + x ** -1.5 * 0", "torch.rand(5, 7) + 0.5")
MORE["div_floor"] = problem("", "torch.div(x * 4, 1.3, rounding_mode='floor') + torch.div(x * 4, 1.3, rounding_mode='trunc') + (x * 4) // 1.1", R)
MORE["casts"] = problem("", "(x.half().float() * 2).to(torch.float32).type_as(x)", R)
MORE["cast_to_int_refused"] = problem("", "x.to(torch.int32) * 2", R)
MORE["factories"] = problem("", "x + torch.ones(5, 7, device=x.device) * 3 - torch.zeros_like(x) + x.new_full((5, 7), 0.25)", R)
MORE["arange_start_step"] = problem("", "x * torch.arange(1, 15, 2, device=x.device)", R)
MORE["remainder_neg_divisor"] = problem("", "torch.remainder(x * 5, -1.3) + torch.fmod(x * 5, -1.3)", R)
MORE["ndim_dim"] = problem("", "x * x.dim() + x.ndim", R)
MORE["chunk3"] = problem("", "torch.chunk(x, 3, dim=-1)[2] - torch.chunk(x, 3, dim=-1)[0]", "torch.randn(4, 9)")
MORE["unbind_last"] = problem("", "torch.unbind(x, dim=1)[-1] * 2", "torch.randn(4, 5)")
C.update(MORE)

C["casts_bf16"] = problem("", "(x.bfloat16().float() * 2).to(torch.float32)", R)
MORE["casts_bf16"] = C["casts_bf16"]

R4 = "torch.randn(2, 3, 5, 7)"
THIRD = {}
THIRD["module_inplace_flags"] = problem("self.a = nn.ReLU6(inplace=True)\nself.b = nn.SiLU(inplace=True)\nself.c = nn.Hardtanh(-0.5, 0.5, inplace=True)",
                                        "self.c(self.b(self.a(x * 4)))", R4)
THIRD["F_inplace_kw"] = problem("", "F.elu(x, 0.5, inplace=True) + F.hardtanh(x, inplace=True) + F.silu(x, inplace=True)", R)
THIRD["glu"] = problem("", "F.glu(x, dim=-1)", "torch.randn(5, 8)")
THIRD["nn_glu"] = problem("self.g = nn.GLU(dim=1)", "self.g(x)", "torch.randn(3, 6, 5)")
THIRD["rrelu_eval"] = problem("self.r = nn.RReLU(0.1, 0.3)", "self.r(x) + F.rrelu(x, training=False)", R)
THIRD["clamp_min_max_methods"] = problem("", "x.clamp_min(0.1) + torch.clamp_max(x, 0.2) + torch.clamp(x, min=0.0)", R)
THIRD["method_inplace_unary"] = problem("", "x.abs_().exp_().neg_()", R)
THIRD["addcmul_addcdiv"] = problem("", "torch.addcmul(x, y, z, value=0.5) + torch.addcdiv(x, y, z.abs() + 1, value=2.0)",
                                   "torch.randn(5, 7), torch.randn(5, 7), torch.randn(5, 7)", "x, y, z")
THIRD["lerp"] = problem("", "torch.lerp(x, y, 0.3)", "torch.randn(5, 7), torch.randn(5, 7)", "x, y")
THIRD["sinh_cosh"] = problem("", "torch.sinh(x) + torch.cosh(x) + torch.tan(x * 0.5) + torch.atan(x)", R)
THIRD["special"] = problem("", "torch.special.expit(x) + torch.special.erf(x) + torch.special.logit(torch.sigmoid(x))", R)
THIRD["rsub_rdiv"] = problem("", "1 - x + 2 / (x.abs() + 1) + torch.rsub(x, 1.0)", R)
THIRD["masked_fill_inplace"] = problem("", "x.masked_fill_(x < 0, 0.5) * 2", R)
THIRD["fp16_gelu"] = problem("", "F.gelu(x) * 2", "torch.randn(5, 7).half()")
THIRD["zero_dim_param"] = problem("self.s = nn.Parameter(torch.tensor(2.0))", "x * self.s + self.s", R)
THIRD["init_shape_param"] = problem("self.b = nn.Parameter(torch.randn(shape))", "torch.sigmoid(x + self.b)", R,
                                    init_args=", shape", init_inputs="[(5, 1)]")
THIRD["forward_default_arg"] = problem("", "x * scale", R, args="x, scale=2.0")
THIRD["T_2d"] = problem("", "x.T.relu() * 2", R)
THIRD["long_1d"] = problem("", "torch.sigmoid(x) * x", "torch.randn(1001)")
THIRD["four_d_bcast"] = problem("self.w = nn.Parameter(torch.randn(3, 1, 1))", "torch.tanh(x * self.w + y)",
                                "torch.randn(2, 3, 5, 7), torch.randn(1, 1, 5, 7)", "x, y")
THIRD["tuple_output"] = problem("", "(x + 1, x * 2)", R)
THIRD["square_inplace"] = problem("", "x.square_() + x", R)
THIRD["sign_neg"] = problem("", "x.sign() * x.neg() + torch.signbit(x).float()", R)
THIRD["softmin"] = problem("", "F.softmin(x, dim=1)", R)
THIRD["hardtanh_func_inplace"] = problem("", "F.hardtanh_(x * 2, -0.3, 0.3) + F.relu6(x)", R)
THIRD["int_tensor_input"] = problem("", "x * k", "torch.randn(5, 7), torch.randint(0, 5, (5, 7))", "x, k")
THIRD["bool_mask_mul"] = problem("", "x * (x > 0)", R)
THIRD["where_two_scalars"] = problem("", "torch.where(x > 0, 1.0, -1.0) * x", R)
THIRD["logaddexp"] = problem("", "torch.logaddexp(x, y)", "torch.randn(5, 7), torch.randn(5, 7)", "x, y")
THIRD["hypot_atan2"] = problem("", "torch.hypot(x, y)", "torch.randn(5, 7), torch.randn(5, 7)", "x, y")
THIRD["xlogy"] = problem("", "torch.xlogy(x.abs(), y.abs() + 0.1)", "torch.randn(5, 7), torch.randn(5, 7)", "x, y")
THIRD["nan_to_num"] = problem("", "torch.nan_to_num(torch.log(x))", R)
THIRD["frac"] = problem("", "torch.frac(x * 3)", R)
THIRD["clip"] = problem("", "torch.clip(x, -0.5, 0.5) + x.clip(min=0.1)", R)
C.update(THIRD)
FOURTH = {"rrelu_F": problem("", "F.rrelu(x, 0.1, 0.3) + F.rrelu(x)", R),
       "sinh_cosh_tan": problem("", "torch.sinh(x) + torch.cosh(x) + torch.tan(x * 0.5)", R),
       "logit_eps": problem("", "torch.logit(torch.sigmoid(x * 5), eps=1e-3)", R),
       "nan_to_num_custom": problem("", "torch.nan_to_num(torch.log(x), nan=0.5, neginf=-3.0)", R),
       "special_misc": problem("", "torch.special.expm1(x) + torch.special.log1p(x.abs()) + torch.special.exp2(x)", R),
       "lerp_tensor_w": problem("", "torch.lerp(x, y, w)", "torch.randn(5, 7), torch.randn(5, 7), torch.rand(7)", "x, y, w"),
       "glu_dim0": problem("", "F.glu(x, 0) * 2", "torch.randn(6, 5)"),
       "default_arg_used": problem("", "x * scale + bias", R, args="x, scale=2.0, bias=-1"),
}
C.update(FOURTH)


def fwd(body, inputs="torch.randn(5, 7), torch.randn(5, 7)", args="x, y"):
    return ("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.lin = nn.Identity()\n\n    def forward(self, " + args + "):\n" + "".join("        " + l + "\n" for l in body.splitlines()) +
            "\ndef get_inputs():\n    return [" + inputs + "]\n\ndef get_init_inputs():\n    return []\n")

FIFTH = {"augmented_assign": MORE["augmented_assign"],
       "residual": fwd("residual = x\nx = torch.tanh(x) * 2\nx += residual\nx *= y\nreturn x"),
       "alias_then_iadd": fwd("z = x\nx += y\nreturn z * 2 + x"),
       "view_then_iadd": fwd("z = x.view(35)\nx += y\nreturn z.view(5, 7) + 1"),
       "iadd_scalar_chain": fwd("x = x * 1\nx += 1\nx -= y\nx /= 2\nx **= 2\nreturn x"),
       "size_iadd": fwd("n = x.size(1)\nn += 1\nreturn x * n"),
       "pow_zero": problem("", "torch.pow(x, 0.0) + torch.pow(x, 0) * x", R),
       "pow_neg_frac": problem("", "torch.pow(x.abs() + 0.2, -1.3)", R),
       "remainder_tensor_neg": problem("", "torch.remainder(x * 5, y)", "torch.randn(5, 7), -torch.rand(5, 7) - 0.5", "x, y")}
C.update(FIFTH)

CASES = C
