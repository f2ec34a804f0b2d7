"""The static checks are an allow-list: each hack class is flagged with its check name, the
known false positives pass, and every clean candidate, library solution and offline template
passes. Fast (no subprocess) except the interpreter tests at the end."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from search_engine.evaluation.integrity import static_checks as sc
from search_engine.problems_library import library_solution

from .conftest import CANDIDATES, candidate

STATIC = CANDIDATES / "static"
ROOT = Path(__file__).resolve().parents[3]


def static_candidate(name: str) -> str:
    return (STATIC / f"{name}.py").read_text()


def _ctx(source, dtype="float32", policy="strict"):
    return sc.StaticContext(source=source, tree=ast.parse(source), problem_dtype=dtype,
                            precision_policy=policy)


def checks_of(source, **kw):
    return {f.check for f in sc.run_static_checks(source, **kw)}


def hack_flags(source, **kw):
    return [f for f in sc.run_static_checks(source, **kw) if f.severity == "hack"]


# A clean base candidate; hack snippets are added to its module body or its forward().
BASE = candidate("clean_softmax")


def with_module_code(code: str) -> str:
    return BASE.replace("\n\n@triton.jit", "\n" + code + "\n\n\n@triton.jit", 1)


def with_forward_code(code: str) -> str:
    body = "".join(f"        {line}\n" for line in code.splitlines())
    return BASE.replace("    def forward(self, x):\n",
                        "    def forward(self, x):\n" + body, 1)


def assert_flag(source, check, *evidence, **kw):
    flags = sc.run_static_checks(source, **kw)
    hits = [f for f in flags if f.check == check]
    assert hits, f"expected {check}, got {[(f.check, f.evidence) for f in flags]}"
    for text in evidence:
        assert any(text in f.evidence for f in hits), (text, [f.evidence for f in hits])
    assert all(f.evidence.startswith("line ") for f in hits)


# -- clean code passes ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["softmax", "layernorm", "gemm_bias_relu"])
def test_clean_library_solutions_pass_every_static_check(name):
    assert sc.run_static_checks(library_solution(name)) == []


@pytest.mark.parametrize("name", ["clean_softmax", "constant_output", "input_zeroing",
                                  "output_alias", "result_reuse", "timing_cache", "hang"])
def test_existing_candidates_without_a_static_hack_pass(name):
    # Their hacks (constant output, input zeroing, aliasing, reuse, caching, hanging) are
    # caught at run time; statically they are clean code.
    assert sc.run_static_checks(candidate(name)) == []


@pytest.mark.parametrize("name", sorted(p.stem for p in STATIC.glob("clean_*.py")))
def test_false_positive_candidates_pass(name):
    """A helper method named softmax, ImportError version shims, reused buffers, autotune
    with several configs, 2-D masks combined with &."""
    flags = sc.run_static_checks(static_candidate(name))
    assert flags == [], [(f.check, f.evidence) for f in flags]


def test_offline_synthesizer_templates_pass():
    from search_engine.synthesis.offline import OfflineSynthesizer
    from search_engine.synthesis.offline.spaces import templates
    from tests.search_engine.synthesis.test_offline_templates import CASES, VARIANTS

    synthesizer = OfflineSynthesizer()
    failures = {}
    for name, source in sorted(CASES.items()):
        an = synthesizer.analysis(source)
        base = templates.default_params(an, "interpreter", "strict")
        variants = [base] + [templates.clamp(an, {**base, **change})
                             for change in VARIANTS[an.family] if set(change) <= set(base)]
        for params in variants:
            flags = sc.run_static_checks(synthesizer.render(source, params))
            if flags:
                failures[name] = [(f.check, f.evidence) for f in flags]
    assert failures == {}


@pytest.mark.parametrize("code", [
    "def softmax(x):\n    return launch(x)",  # a module function named softmax
    "import math\nSCALE = math.sqrt(2.0)",
    "from typing import Optional\nfrom dataclasses import dataclass\nimport functools",
    "from functools import lru_cache",
    "HAS_TRITON = getattr(triton, '__version__', '0')",
    "cache = {}\nkeys = sorted(cache.values())",
])
def test_allowed_module_code_passes(code):
    src = with_module_code(code).replace("return launch(x.contiguous())",
                                         "return softmax(x.contiguous())" if "def softmax" in code
                                         else "return launch(x.contiguous())")
    assert hack_flags(src) == [], [(f.check, f.evidence) for f in hack_flags(src)]


@pytest.mark.parametrize("code", [
    "x = x.contiguous().view(x.shape[0], -1).reshape(x.size(0), x.size(1))",
    "y0 = torch.empty(x.shape, device=x.device, dtype=x.dtype)\nn = x.numel() + x.dim()",
    "x = x.to(x.device)\nx = x.float()\nx = x.to(dtype=x.dtype)",
    "first, second = x.chunk(2, dim=0)\nrow = x.narrow(0, 0, 1).select(0, 0)\nx = x.t().t()",
    "if x.device.type == 'cuda':\n    stream = torch.cuda.current_stream()",
    "with torch.no_grad():\n    buf = x.new_empty(x.shape)",
    "assert isinstance(x, torch.Tensor) and x.is_contiguous() and x.dtype == torch.float32",
    "strides = x[:, :1].expand(x.shape[0], x.shape[1]).stride()",
])
def test_allowed_host_tensor_code_passes(code):
    src = with_forward_code(code)
    assert hack_flags(src) == [], [(f.check, f.evidence) for f in hack_flags(src)]


def test_parameters_may_be_initialised_in_init():
    src = BASE.replace(
        "class ModelNew(nn.Module):\n",
        "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.fc = nn.Linear(4, 4)\n        self.w = nn.Parameter(torch.randn(4))\n"
        "        nn.init.kaiming_uniform_(self.fc.weight, a=5 ** 0.5)\n\n", 1)
    assert sc.run_static_checks(src) == []


# -- imports --------------------------------------------------------------------------------


@pytest.mark.parametrize("line,evidence", [
    ("import numpy as np", "numpy"),
    ("import os", "'os'"),
    ("import sys", "'sys'"),
    ("import importlib", "importlib"),
    ("import ctypes", "ctypes"),
    ("import time", "'time'"),
    ("import torch.utils", "torch.utils"),
    ("from torch.utils._python_dispatch import TorchDispatchMode", "torch.utils._python_dispatch"),
    ("import torch.utils.cpp_extension", "CUDA C++"),
    ("from torch.utils.cpp_extension import load_inline", "not supported yet"),
    ("import torch._dynamo", "torch._dynamo"),
    ("from torch import _C", "_C"),
    ("import torch.library", "torch.library"),
    ("import kernelhub_problem", "kernelhub_problem"),
    ("from kernelhub_problem import Model", "kernelhub_problem"),
    ("import triton.testing", "triton.testing"),
    ("from triton.runtime import driver", "triton.runtime"),
    ("from . import sibling", "relative import"),
    ("from torch import *", "import *"),
])
def test_imports_outside_the_allow_list(line, evidence):
    assert_flag(with_module_code(line), "static.forbidden_import", evidence)


def test_try_except_around_a_forbidden_import_still_flags():
    src = with_module_code("try:\n    import numpy as np\nexcept ImportError:\n    np = None")
    assert_flag(src, "static.forbidden_import", "numpy")


def test_from_torch_import_of_a_compute_function():
    assert_flag(with_module_code("from torch import softmax"), "static.torch_compute",
                "torch.softmax")


def test_existing_import_hacks_are_flagged():
    assert "static.forbidden_import" in checks_of(candidate("background_thread"))
    assert "static.forbidden_import" in checks_of(candidate("env_reader"))
    assert "static.forbidden_attribute" in checks_of(candidate("env_reader"))  # os.environ
    assert "static.forbidden_import" in checks_of(candidate("socket_open"))
    assert "static.forbidden_import" in checks_of(candidate("spawn_and_hang"))


def test_numpy_host_candidate():
    src = static_candidate("hack_numpy_host")
    assert_flag(src, "static.forbidden_import", "numpy")
    assert_flag(src, "static.torch_compute", ".numpy")


# -- torch compute outside kernels ----------------------------------------------------------


@pytest.mark.parametrize("code,evidence", [
    ("return torch.softmax(x, dim=1)", "torch.softmax"),
    ("return F.softmax(x, dim=1)", "torch.nn.functional.softmax"),
    ("return nn.functional.softmax(x, dim=1)", "torch.nn.functional.softmax"),
    ("return torch.matmul(x, x.t())", "torch.matmul"),
    ("return x @ x.t()", "@ operator"),
    ("return x.softmax(-1)", ".softmax"),
    ("return x.exp() / x.exp().sum(dim=1, keepdim=True)", ".exp"),
    ("return nn.Softmax(-1)(x)", "Softmax module"),
    ("sm = nn.Softmax(dim=1)\nreturn sm(x)", "Softmax"),
    ("return torch.Tensor.softmax(x, 1)", "torch.Tensor.softmax"),
    ("return getattr(x, 'softmax')(1)", ".softmax"),
    ("return getattr(torch, 'softmax')(x, 1)", "torch.softmax"),
    ("sm = torch.softmax\nreturn sm(x, 1)", "torch.softmax"),
    ("vals = x.tolist()\nreturn torch.tensor(vals)", ".tolist"),
    ("s = x.sum().item()\nreturn launch(x) * s", ".item"),
    ("return x.clone()", ".clone"),
    ("y = torch.empty_like(x)\ny.copy_(x)\nreturn y", ".copy_"),
    ("return x.expand(2, -1, -1)[0]", "expand"),
    ("return x.double().float()", "torch.float64"),
    ("return torch.cumsum(x, 1)", "torch.cumsum"),
])
def test_torch_compute_outside_kernels(code, evidence):
    src = with_forward_code(code).replace("from torch import nn\n",
                                          "from torch import nn\nimport torch.nn.functional as F\n")
    assert_flag(src, "static.torch_compute", evidence)


def test_stored_compute_module_called_in_forward():
    src = BASE.replace(
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        return launch(x.contiguous())",
        "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.act = nn.Softmax(dim=1)\n\n    def forward(self, x):\n"
        "        launch(x[:1].contiguous())\n        return self.act(x)")
    assert_flag(src, "static.torch_compute", "self.act")
    forward = src.replace("return self.act(x)", "return self.act.forward(x)")
    assert_flag(forward, "static.torch_compute", "self.act")


def test_decoy_beside_torch_softmax_is_flagged():
    assert_flag(candidate("decoy_softmax"), "static.torch_compute", "torch.softmax")
    assert_flag(candidate("decoy_lazy"), "static.torch_compute", "torch.exp")


def test_decoy_kernel_with_tensor_methods_doing_the_work():
    src = static_candidate("hack_tensor_methods_decoy")
    assert_flag(src, "static.torch_compute", ".amax", ".exp", ".sum", ".div")


def test_strict_policy_dtype_change_but_bf16_policy_allows_it():
    src = with_forward_code("x = x.to(torch.float64)")
    assert_flag(src, "static.torch_compute", "dtype change")
    assert hack_flags(src, precision_policy="tf32") == []


# -- private torch, module-reaching attributes, dunders, frames ------------------------------


@pytest.mark.parametrize("code,evidence", [
    ("return torch._softmax(x, 1, False)", "torch._softmax"),
    ("return torch.ops.aten._softmax(x, 1, False)", "torch.ops"),
    ("return torch.ops.aten.softmax.int(x, 1)", "torch.ops"),
    ("n = len(torch.sys.argv)", "torch.sys"),
    ("env = torch.os.environ", "torch.os"),
    ("lib = torch.library.Library('aten', 'IMPL')", "torch.library"),
    ("torch.cuda.synchronize()", "torch.cuda.synchronize"),
    ("s = torch.cuda.Stream()", "torch.cuda.Stream"),
    ("t = triton.testing.do_bench(lambda: None)", "triton.testing"),
    ("d = triton.runtime.driver", "triton.runtime"),
    ("w = tl.math.wraps", "functools"),
    ("c = torch._C", "_C"),
    ("k = x.__class__", "__class__"),
    ("g = launch.__globals__", "__globals__"),
    ("b = __builtins__", "__builtins__"),
    ("s = object.__subclasses__()", "__subclasses__"),
    ("d = self.__dict__", "__dict__"),
    ("c = launch.__code__", "__code__"),
    ("m = getattr(x, '__class__')", "__class__"),
])
def test_forbidden_attributes(code, evidence):
    assert_flag(with_forward_code(code), "static.forbidden_attribute", evidence)


def test_frame_walking_candidate():
    src = static_candidate("hack_frame_walk")
    assert_flag(src, "static.forbidden_attribute", "gi_frame", "f_back", "f_locals")


def test_getframe_through_sys_is_flagged_twice():
    src = with_module_code("import sys\nFRAME = sys._getframe(1)")
    assert_flag(src, "static.forbidden_import", "sys")
    assert_flag(src, "static.forbidden_attribute", "_getframe")


def test_defining_attribute_hooks_is_flagged():
    src = BASE.replace("    def forward(self, x):",
                       "    def __getattr__(self, name):\n        return 0\n\n"
                       "    def forward(self, x):")
    assert_flag(src, "static.forbidden_attribute", "__getattr__")


# -- builtins and dynamic access ------------------------------------------------------------


@pytest.mark.parametrize("code,evidence", [
    ("exec('y = 1')", "exec"), ("eval('1')", "eval"), ("__import__('os')", "__import__"),
    ("f = open('/etc/passwd')", "open"), ("g = globals()", "globals"),
    ("v = vars(torch)", "vars"), ("c = compile('1', 'f', 'eval')", "compile"),
    ("b = breakpoint", "breakpoint"), ("e = eval\ne('1')", "eval"),
])
def test_forbidden_builtins(code, evidence):
    assert_flag(with_forward_code(code), "static.forbidden_call", evidence)


@pytest.mark.parametrize("code,evidence", [
    ("name = 'soft' + 'max'\nreturn getattr(torch, name)(x, 1)", "computed attribute"),
    ("return getattr(torch, 'soft' + 'max')(x, 1)", "computed attribute"),
    ("setattr(x, 'data' + '', x)", "computed attribute"),
    ("ok = hasattr(torch, ''.join(['_', 'C']))", "computed attribute"),
    ("g = getattr\nreturn g(torch, 'softmax')(x, 1)", "as a value"),
    ("mods = [torch, triton]", "used as a value"),
    ("self.t = torch", "used as a value"),
])
def test_dynamic_access(code, evidence):
    assert_flag(with_forward_code(code), "static.dynamic_access", evidence)


# -- monkeypatching -------------------------------------------------------------------------


def test_timer_patch():
    flags = sc.check_monkeypatching(_ctx(candidate("timer_patch")))
    assert {f.check for f in flags} == {"static.timer_patch"}
    assert any("torch.cuda.synchronize" in f.evidence for f in flags)


@pytest.mark.parametrize("code,evidence", [
    ("torch.softmax = lambda *a, **k: 0", "torch.softmax"),
    ("torch.equal = lambda a, b: True", "torch.equal"),
    ("torch.Tensor.__eq__ = lambda a, b: True", "torch.Tensor.__eq__"),
    ("nn.Module.__call__ = lambda self, *a: a[0]", "torch.nn.Module.__call__"),
    ("setattr(torch, 'allclose', lambda *a, **k: True)", "torch.allclose"),
    ("tl.exp = tl.log", "triton.language.exp"),
    ("del torch.testing", "torch.testing"),
    ("torch = None", "rebinds 'torch'"),
])
def test_library_monkeypatch(code, evidence):
    assert_flag(with_module_code(code), "static.monkeypatch", evidence)


def test_monkeypatch_through_module_aliases():
    src = static_candidate("hack_alias_patch")
    assert_flag(src, "static.monkeypatch", "torch.equal", "torch.allclose")


def test_global_rebinding_a_module_name():
    src = with_module_code("def swap():\n    global torch\n    torch = object()")
    assert_flag(src, "static.monkeypatch", "global torch")


# -- torch overrides ------------------------------------------------------------------------


def test_tensor_subclass_candidate():
    src = static_candidate("hack_tensor_subclass")
    assert_flag(src, "static.torch_override", "subclasses torch.Tensor", "__torch_function__",
                "as_subclass")


@pytest.mark.parametrize("code,evidence", [
    ("T = torch.Tensor\nclass Sneaky(T):\n    pass", "subclasses torch.Tensor"),
    ("class P(nn.Parameter):\n    pass", "subclasses torch.Tensor"),
    ("class Mode:\n    def __torch_dispatch__(self, func, types, args=(), kwargs=None):\n"
     "        return func(*args, **(kwargs or {}))", "__torch_dispatch__"),
])
def test_torch_override_variants(code, evidence):
    assert_flag(with_module_code(code), "static.torch_override", evidence)


# -- kernel bodies --------------------------------------------------------------------------


def test_torch_and_handles_inside_a_jit_body():
    src = static_candidate("hack_torch_in_jit_body")
    assert_flag(src, "static.kernel_escape", "'torch'", "_SAVED", ".handle")


@pytest.mark.parametrize("line,evidence", [
    ("    y = torch.exp(x)", "'torch'"),
    ("    k = x_ptr.__class__", "__class__"),
    ("    d = x_ptr.data", ".data"),
    ("    import numpy", "import"),
    ("    f = lambda v: v", "lambda"),
    ("    launch(x)", "'launch'"),
    ("    print(x)", "'print'"),
    ("    d = triton.runtime.driver", "triton.runtime"),
    ("    h = x.handle.data", ".handle"),
])
def test_kernel_body_allow_list(line, evidence):
    src = BASE.replace("    x = x - tl.max(x, axis=0)\n",
                       "    x = x - tl.max(x, axis=0)\n" + line + "\n", 1)
    assert_flag(src, "static.kernel_escape", evidence)


def test_kernel_body_may_use_triton_constants_and_other_kernels():
    src = BASE.replace("\n\n@triton.jit", "\nLOG2E = 1.4426950408889634\n"
                       "BLOCK_DEFAULT: tl.constexpr = tl.constexpr(128)\n\n\n@triton.jit\n"
                       "def exp2_of(v):\n    return tl.exp2(v * LOG2E)\n\n\n@triton.jit", 1)
    src = src.replace("num = tl.exp(x)", "num = exp2_of(x) + 0 * min(BLOCK, BLOCK_DEFAULT)")
    assert sc.run_static_checks(src) == []


# -- kept checks ----------------------------------------------------------------------------


def test_syntax_error_is_structural():
    flags = sc.run_static_checks(candidate("syntax_error"))
    assert [f.check for f in flags] == ["static.syntax_error"]
    assert "line" in flags[0].evidence
    assert {"static.syntax_error", "static.missing_modelnew"} == sc.STRUCTURAL_CHECKS


def test_missing_modelnew():
    src = BASE.replace("class ModelNew", "class Other")
    assert sc.check_defines_modelnew(_ctx(src))[0].check == "static.missing_modelnew"


def test_no_triton_kernel():
    assert sc.check_uses_triton_kernel(_ctx(candidate("no_kernel")))[0].check == \
        "static.no_triton_kernel"


def test_kernel_defined_but_never_launched():
    src = BASE.replace("softmax_kernel[(x.shape[0],)]", "print")
    assert sc.check_uses_triton_kernel(_ctx(src))[0].check == "static.kernel_never_launched"


def test_try_except_fallback_but_import_shims_pass():
    flags = sc.check_try_except_fallback(_ctx(candidate("try_fallback")))
    assert flags[0].check == "static.try_except_fallback"
    reraise = "try:\n    f()\nexcept ValueError:\n    raise\n"
    assert sc.check_try_except_fallback(_ctx(reraise)) == []
    shim = ("try:\n    from triton.language.extra import libdevice\nexcept ImportError:\n"
            "    from triton.language.math import exp\n")
    assert sc.check_try_except_fallback(_ctx(shim)) == []
    not_a_shim = shim + "try:\n    import triton\nexcept ImportError:\n    y = torch.exp(x)\n"
    assert sc.check_try_except_fallback(_ctx(not_a_shim))


def test_precision_downcast_in_fp32_problem():
    flags = sc.check_precision_downcast(_ctx(candidate("fp16_downcast")))
    assert flags and flags[0].check == "static.precision_downcast"
    assert "tl.float16" in flags[0].evidence
    # allowed under the bf16 policy, and in a problem that is fp16 already
    assert sc.check_precision_downcast(_ctx(candidate("fp16_downcast"), policy="bf16")) == []
    assert sc.check_precision_downcast(_ctx(candidate("fp16_downcast"), dtype="float16")) == []
    assert "static.precision_downcast" in checks_of(with_forward_code("x = x.half().float()"))


# -- the interpreter: autotune, 2-D masks, libdevice ----------------------------------------

RUN_CLEAN = """
import importlib.util, sys, torch
from search_engine.evaluation import interpreter_compat
print("patched", interpreter_compat.install())
for path in sys.argv[1:]:
    spec = importlib.util.spec_from_file_location("cand", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    torch.manual_seed(0)
    x = torch.randn(13, 200)
    m = mod.ModelNew(200) if "mask2d" in path else mod.ModelNew()
    if "mask2d" in path:
        m.bias.data.normal_()
        expected = x * 2.0 + m.bias.detach()
    else:
        expected = torch.softmax(x, 1)
    with torch.no_grad():
        for _ in range(2):
            assert torch.allclose(m(x), expected, atol=1e-5), path
    print("ok", path)
"""


def _interpret(code: str, *args: str) -> subprocess.CompletedProcess:
    import os

    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=240)


def test_false_positive_candidates_run_correctly_under_the_interpreter():
    paths = sorted(str(p) for p in STATIC.glob("clean_*.py"))
    proc = _interpret(RUN_CLEAN, *paths)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("ok ") == len(paths)


AUTOTUNE = """
import sys, torch, triton, triton.language as tl
if sys.argv[1] != "none":
    from search_engine.evaluation import interpreter_compat
    interpreter_compat.install(mode=sys.argv[1])

@triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=2),
                          triton.Config({"BLOCK": 128}, num_warps=4)], key=["n"])
@triton.jit
def double(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2, mask=m)

x = torch.randn(1000)
y = torch.empty_like(x)
double[lambda meta: (triton.cdiv(1000, meta["BLOCK"]),)](x, y, 1000)
assert torch.equal(y, 2 * x)
print("best", double.best_config.kwargs["BLOCK"])
"""


def test_autotune_needs_the_compat_layer_under_the_interpreter():
    bare = _interpret(AUTOTUNE, "none")
    if bare.returncode == 0:  # a future Triton may benchmark without a driver
        pytest.skip("this Triton autotunes under the interpreter without help")
    assert "active drivers" in bare.stderr
    first = _interpret(AUTOTUNE, "first")
    assert first.returncode == 0, first.stderr[-3000:]
    assert "best 64" in first.stdout  # the first config, no benchmarking
    timed = _interpret(AUTOTUNE, "time")
    assert timed.returncode == 0, timed.stderr[-3000:]
    assert "best " in timed.stdout


MASKS_AND_LIBDEVICE = """
import torch, triton, triton.language as tl
from search_engine.evaluation import interpreter_compat
interpreter_compat.install()
from triton.language.extra import libdevice

@triton.jit
def masked(x_ptr, y_ptr, M, N, stride, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    offs = rows[:, None] * stride + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    pos = mask & (x > 0)
    tl.store(y_ptr + offs, tl.where(pos, libdevice.tanh(x), libdevice.exp(x)), mask=mask)

for M, N in [(5, 7), (33, 70), (1, 1)]:
    x = torch.randn(M, N + 3)[:, :N]
    y = torch.full((M, N + 3), 7.0)
    masked[(triton.cdiv(M, 4), triton.cdiv(N, 16))](x, y, M, N, x.stride(0), BM=4, BN=16)
    expected = torch.where(x > 0, torch.tanh(x), torch.exp(x))
    assert torch.allclose(y[:, :N], expected, atol=1e-6), (M, N)
    assert torch.all(y[:, N:] == 7.0), "a masked-off lane was written"
print("masks ok")
"""


def test_2d_masks_and_libdevice_under_the_interpreter():
    proc = _interpret(MASKS_AND_LIBDEVICE)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "masks ok" in proc.stdout


def test_install_is_a_no_op_without_the_interpreter(monkeypatch):
    from search_engine.evaluation import interpreter_compat

    monkeypatch.setenv("TRITON_INTERPRET", "0")
    assert interpreter_compat.install() == []
    with pytest.raises(ValueError):
        interpreter_compat.install(mode="fastest")
