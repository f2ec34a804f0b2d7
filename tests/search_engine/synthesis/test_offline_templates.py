"""The offline synthesizer writes real Triton kernels: every family and variant is correct
against the reference (Triton interpreter, small shapes) and does its work in its kernels."""

import ast

import pytest
import torch

from search_engine.synthesis.offline import OfflineSynthesizer
from search_engine.synthesis.offline.spaces import templates

from .conftest import library_source


def problem(forward: str, inputs: str, init: str = "", args: str = "x") -> str:
    return (
        "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
        "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        + "".join(f"        {line}\n" for line in init.splitlines())
        + f"    def forward(self, {args}):\n        return {forward}\n\n"
        f"def get_inputs():\n    return [{inputs}]\n\n"
        "def get_init_inputs():\n    return []\n")


CASES = {
    # elementwise chains
    "chain": problem("torch.clamp(F.gelu(x * 0.5 + self.b) + y, -3.0, 3.0)",
                     "torch.randn(8, 96), torch.randn(8, 96)",
                     "self.b = nn.Parameter(torch.randn(96))", "x, y"),
    "activations": problem("F.silu(x) + torch.sigmoid(x) * torch.tanh(x) - F.leaky_relu(x, 0.2)"
                           " + F.elu(x) + F.softplus(x) + F.hardtanh(x) + F.mish(x)",
                           "torch.randn(4, 8, 33)"),
    "broadcast": problem("torch.relu(x) * y + x ** 2 / 3.0", "torch.randn(4, 8, 5), "
                         "torch.randn(8, 1)", args="x, y"),
    # row reductions and norms
    "softmax_dim1_3d": problem("torch.softmax(x, dim=1)", "torch.randn(4, 37, 5)"),
    "log_softmax": problem("torch.log_softmax(x, dim=-1)", "torch.randn(8, 300)"),
    "layernorm_3d": problem("F.layer_norm(x, x.shape[1:])", "torch.randn(4, 6, 10)"),
    "rms": problem("x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + 1e-5)",
                   "torch.randn(4, 16, 3, 3)"),
    "sum": problem("torch.sum(x, dim=1, keepdim=True)", "torch.randn(8, 100, 3)"),
    "mean": problem("torch.mean(x, dim=-1)", "torch.randn(8, 100)"),
    "max": problem("torch.max(x, dim=1)[0]", "torch.randn(8, 300)"),
    "min": problem("torch.amin(x, dim=-1)", "torch.randn(8, 300)"),
    "argmax": problem("torch.argmax(x, dim=-1)", "torch.randn(8, 300)"),
    "argmin": problem("torch.argmin(x, dim=1)", "torch.randn(8, 70, 3)"),
    "l1": problem("x / torch.sum(torch.abs(x), dim=1, keepdim=True)", "torch.randn(8, 100)"),
    "l2": problem("x / torch.norm(x, p=2, dim=1, keepdim=True)", "torch.randn(8, 100)"),
    "frobenius": problem("x / torch.norm(x, p='fro')", "torch.randn(8, 100)"),
    "std": problem("(x - x.mean(dim=-1, keepdim=True)) / x.std(dim=-1, keepdim=True)",
                   "torch.randn(8, 100)"),
    # matmul with epilogues
    "linear_bias_gelu": library_source("linear_gelu"),
    "matmul_transposed": problem("torch.relu(torch.matmul(x.t(), w.transpose(0, 1)))",
                                 "torch.randn(48, 40), torch.randn(24, 48)", args="x, w"),
    "bmm_transposed": problem("torch.bmm(x, w.transpose(1, 2)) * 2.0",
                              "torch.randn(3, 20, 32), torch.randn(3, 24, 32)", args="x, w"),
    "linear_3d_residual": problem("F.gelu(F.linear(x, w, b) + r)",
                                  "torch.randn(2, 10, 32), torch.randn(48, 32), torch.randn(48),"
                                  " torch.randn(2, 10, 48)", args="x, w, b, r"),
    "matmul_softmax": problem("torch.softmax(x @ w * 0.5, dim=-1)",
                              "torch.randn(40, 64), torch.randn(64, 48)", args="x, w"),
    "matmul_row_sum": problem("torch.sum(torch.relu(x @ w), dim=1)",
                              "torch.randn(40, 64), torch.randn(64, 48)", args="x, w"),
}

VARIANTS = {
    "elementwise": [{"BLOCK": 256, "num_warps": 2}],
    "rows": [{"variant": "looped", "BLOCK_R": 256, "ROWS": 2}, {"variant": "single",
                                                               "ROWS": 1}],
    "matmul": [{"SPLIT_K": 2, "BLOCK_K": 16, "GROUP_M": 1, "BLOCK_M": 16},
               {"tail_variant": "looped", "tail_BLOCK_R": 256}],
}


def no_torch_math(source: str) -> bool:
    """The candidate's forward only allocates and launches: no torch math calls."""
    allowed = {"empty", "zeros", "contiguous", "reshape", "transpose", "expand", "stride",
               "cdiv", "numel", "_epilogue_strides", "tuple", "ValueError",
               "kh_expect_shape", "str",  # the shape contract (travel.py)
               "kh_contiguous"}  # the layout copy, a Triton kernel (writers/layout_copy.py)
    tree = ast.parse(source)
    model = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelNew")
    forward = next(n for n in model.body if isinstance(n, ast.FunctionDef)
                   and n.name == "forward")
    for node in ast.walk(forward):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name not in allowed and not (isinstance(func, ast.Subscript)):
                return False
    return True


def check(run, source, candidate):
    expected, got, launched = run(source, candidate)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    if expected.dtype.is_floating_point:
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)
    else:
        assert torch.equal(got, expected)
    assert launched, "no Triton kernel was launched"
    assert "@triton.jit" in candidate and no_torch_math(candidate)


@pytest.mark.parametrize("name", sorted(CASES))
def test_default_template_is_correct(name, run):
    synthesizer = OfflineSynthesizer()
    source = CASES[name]
    an = synthesizer.analysis(source)
    candidate = synthesizer.render(source, templates.default_params(an, "interpreter",
                                                                    "strict"))
    check(run, source, candidate)


@pytest.mark.parametrize("name", ["chain", "softmax_dim1_3d", "argmax", "std", "frobenius",
                                  "linear_3d_residual", "matmul_softmax", "bmm_transposed"])
def test_template_variants_are_correct(name, run):
    synthesizer = OfflineSynthesizer()
    source = CASES[name]
    an = synthesizer.analysis(source)
    base = templates.default_params(an, "interpreter", "strict")
    for change in VARIANTS[an.family]:
        if not set(change) <= set(base):
            continue
        params = templates.clamp(an, {**base, **change})
        candidate = synthesizer.render(source, params)
        check(run, source, candidate)


def test_families():
    synthesizer = OfflineSynthesizer()
    families = {name: synthesizer.analysis(src).family for name, src in CASES.items()}
    assert families["chain"] == "elementwise"
    assert families["rms"] == families["argmax"] == "rows"
    assert families["linear_bias_gelu"] == families["matmul_softmax"] == "matmul"


def test_long_rows_default_to_a_streaming_variant():
    synthesizer = OfflineSynthesizer()
    an = synthesizer.analysis(problem("torch.softmax(x, dim=-1)", "torch.randn(2, 40000)"))
    params = templates.default_params(an, "h200", "strict")
    assert params["variant"] in ("looped", "online", "split")
    assert not templates.valid(an, {**params, "variant": "single"})


@pytest.mark.parametrize("op, chunk", [("sum", 64), ("amax", 64), ("argmax", 32),
                                       ("argmin", 32)])
def test_a_reduction_over_a_middle_dim_walks_neighbouring_rows_in_chunks(op, chunk, run):
    # 256 neighbouring rows a program read coalesced chunk by chunk (a whole strided row of
    # 4 rows ran argmax over dim 1 of 128x4096x4095 at 0.55x compile on the H100); an index
    # reduction keeps each lane's best and column, so ties give the first index
    synthesizer = OfflineSynthesizer()
    source = problem(f"torch.{op}(x, dim=1)", "torch.randint(0, 3, (2, 100, 300)).float()")
    an = synthesizer.analysis(source)
    params = templates.default_params(an, "h200", "strict")
    assert (params["variant"], params["ROWS"], params["BLOCK_R"]) == ("looped", 256, chunk)
    candidate = synthesizer.render(source, params)
    loop = candidate[candidate.index("for start in"):candidate.index("tl.store(")]
    assert "axis=1)" in loop.split("\n    r1 = ")[-1] and "axis=1" not in loop.split("r1 = ")[0]
    check(run, source, candidate)


def test_strict_policy_uses_split_precision_dot_and_tf32_policy_allows_tf32():
    synthesizer = OfflineSynthesizer()
    an = synthesizer.analysis(library_source("linear_gelu"))
    # strict: 3xTF32 (fp32-accurate on tensor cores), never plain tf32
    assert templates.default_params(an, "h200", "strict")["PRECISION"] == "tf32x3"
    assert templates.default_params(an, "h200", "tf32")["PRECISION"] == "tf32"
    import random
    assert "tf32" not in templates.ordered_moves(an, "compute", "strict", random.Random(0))


def test_kernels_refuse_shapes_they_were_not_generated_for(run, tmp_path):
    import importlib.util
    import sys

    source = library_source("softmax")
    synthesizer = OfflineSynthesizer()
    candidate = synthesizer.render(source, templates.default_params(
        synthesizer.analysis(source), "interpreter", "strict"))
    path = tmp_path / "shape_guard_candidate.py"
    path.write_text(candidate)
    spec = importlib.util.spec_from_file_location("shape_guard_candidate", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    # the probe traced the library's softmax at other batch sizes: any batch, same rows
    with pytest.raises(ValueError, match=r"takes x of shape \(B, 256\) for any batch size"):
        module.ModelNew()(torch.randn(3, 5))
    x = torch.randn(3, 256)
    torch.testing.assert_close(module.ModelNew()(x), torch.softmax(x, dim=-1))


def test_fp32_b_is_copied_k_major_for_tensor_core_dots(run):
    """Hopper's tf32 MMAs take 32-bit operands K-major only: a plain a @ b with enough rows
    copies B K-major first (and stays correct); a Linear's weight (K-major already), a
    short A, or 16-bit operands keep B as stored."""
    synthesizer = OfflineSynthesizer()
    plain = problem("torch.matmul(a, b)", "torch.randn(256, 32), torch.randn(32, 48)",
                    args="a, b")
    an = synthesizer.analysis(plain)
    params = templates.default_params(an, "h200", "strict")
    assert params["B_KMAJOR"] == 1
    candidate = synthesizer.render(plain, {**templates.default_params(an, "interpreter",
                                                                      "strict"), "B_KMAJOR": 1})
    # the copy is the tiled layout kernel (torch's transposing copy ran at a third of copy
    # bandwidth or worse on the H100), launched by the candidate itself
    assert "kh_b = kh_contiguous(kh_b.transpose(-1, -2)).transpose(-1, -2)" in candidate
    assert "def kh_layout_copy_kernel" in candidate
    check(run, plain, candidate)
    linear = synthesizer.analysis(library_source("linear_gelu"))
    assert templates.default_params(linear, "h200", "strict")["B_KMAJOR"] == 0
    assert not templates.valid(linear, {**templates.default_params(linear, "h200", "strict"),
                                        "B_KMAJOR": 1})
    short = synthesizer.analysis(problem("torch.matmul(a, b)",
                                         "torch.randn(16, 32), torch.randn(32, 48)", args="a, b"))
    assert templates.default_params(short, "h200", "strict")["B_KMAJOR"] == 0
