"""Each static check catches its hack and passes a clean kernel (no subprocess: fast)."""

import ast

import pytest

from search_engine.evaluation.integrity import static_checks as sc
from search_engine.problems_library import library_solution

from .conftest import candidate


def _ctx(source, dtype="float32", policy="strict"):
    return sc.StaticContext(source=source, tree=ast.parse(source), problem_dtype=dtype,
                            precision_policy=policy)


def checks_of(source, **kw):
    return {f.check for f in sc.run_static_checks(source, **kw)}


@pytest.mark.parametrize("name", ["softmax", "layernorm", "gemm_bias_relu"])
def test_clean_library_solutions_pass_every_static_check(name):
    assert sc.run_static_checks(library_solution(name)) == []


def test_clean_candidate_passes():
    assert sc.run_static_checks(candidate("clean_softmax")) == []


def test_syntax_error_is_structural():
    flags = sc.run_static_checks(candidate("syntax_error"))
    assert [f.check for f in flags] == ["static.syntax_error"]
    assert "line" in flags[0].evidence


def test_missing_modelnew():
    src = candidate("clean_softmax").replace("class ModelNew", "class Other")
    assert sc.check_defines_modelnew(_ctx(src))[0].check == "static.missing_modelnew"


def test_no_triton_kernel():
    assert sc.check_uses_triton_kernel(_ctx(candidate("no_kernel")))[0].check == "static.no_triton_kernel"


def test_kernel_defined_but_never_launched():
    src = candidate("clean_softmax").replace("softmax_kernel[(x.shape[0],)]", "print")
    assert sc.check_uses_triton_kernel(_ctx(src))[0].check == "static.kernel_never_launched"


@pytest.mark.parametrize("line", [
    "import os", "import subprocess", "import socket", "import ctypes", "import threading",
    "import multiprocessing", "import gc", "import inspect", "from os import environ",
    "import time",
])
def test_forbidden_imports(line):
    flags = sc.check_forbidden_imports(_ctx(line + "\n"))
    assert flags and flags[0].check == "static.forbidden_import"


@pytest.mark.parametrize("code", [
    "exec('1')", "eval('1')", "__import__('os')", "open('/etc/passwd')",
    "x = torch.os.environ", "getattr(torch, '_C')",
])
def test_forbidden_calls(code):
    assert sc.check_forbidden_calls(_ctx(code + "\n"))


def test_background_thread_candidate_is_flagged():
    assert "static.forbidden_import" in checks_of(candidate("background_thread"))


def test_env_reader_and_socket_candidates_are_flagged():
    assert "static.forbidden_import" in checks_of(candidate("env_reader"))
    assert "static.forbidden_call" in checks_of(candidate("env_reader"))  # os.environ
    assert "static.forbidden_import" in checks_of(candidate("socket_open"))


def test_try_except_fallback():
    flags = sc.check_try_except_fallback(_ctx(candidate("try_fallback")))
    assert flags[0].check == "static.try_except_fallback"
    reraise = "try:\n    f()\nexcept ValueError:\n    raise\n"
    assert sc.check_try_except_fallback(_ctx(reraise)) == []


def test_timer_patch():
    flags = sc.check_monkeypatching(_ctx(candidate("timer_patch")))
    assert {f.check for f in flags} == {"static.timer_patch"}
    assert any("torch.cuda.synchronize" in f.evidence for f in flags)


def test_library_monkeypatch():
    flags = sc.check_monkeypatching(_ctx("import torch\ntorch.softmax = lambda *a, **k: 0\n"))
    assert flags[0].check == "static.monkeypatch"


def test_precision_downcast_in_fp32_problem():
    flags = sc.check_precision_downcast(_ctx(candidate("fp16_downcast")))
    assert flags and flags[0].check == "static.precision_downcast"
    assert "tl.float16" in flags[0].evidence
    # allowed under the bf16 policy, and in a problem that is fp16 already
    assert sc.check_precision_downcast(_ctx(candidate("fp16_downcast"), policy="bf16")) == []
    assert sc.check_precision_downcast(_ctx(candidate("fp16_downcast"), dtype="float16")) == []


@pytest.mark.parametrize("code,expected", [
    ("y = torch.softmax(x, 1)", "torch.softmax"),
    ("y = F.linear(x, w)", "F.linear"),
    ("y = torch.matmul(a, b)", "torch.matmul"),
    ("y = a @ b", "@ operator"),
    ("y = x.softmax(-1)", ".softmax"),
])
def test_high_level_torch_compute(code, expected):
    flags = sc.check_high_level_torch_compute(_ctx(code + "\n"))
    assert flags and flags[0].check == "static.torch_compute"
    assert expected in flags[0].evidence


def test_nn_linear_call_is_flagged_but_parameter_storage_is_not():
    calls = ("import torch.nn as nn\nclass ModelNew(nn.Module):\n"
             "    def __init__(self):\n        self.fc = nn.Linear(4, 4)\n"
             "    def forward(self, x):\n        return self.fc(x)\n")
    assert sc.check_high_level_torch_compute(_ctx(calls))[0].check == "static.torch_compute"
    storage = calls.replace("return self.fc(x)", "return kernel(x, self.fc.weight)")
    assert sc.check_high_level_torch_compute(_ctx(storage)) == []


def test_decoy_beside_torch_softmax_is_flagged():
    assert "static.torch_compute" in checks_of(candidate("decoy_softmax"))


def test_tl_ops_are_not_torch_compute():
    assert sc.check_high_level_torch_compute(_ctx("y = tl.cumsum(x, 0)\n")) == []
