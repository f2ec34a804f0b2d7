"""Issue 26, class 8: the static allow-list means it. Aliases are followed through any
expression that passes a value on, no class gets the __init__ exemption by name, `self` is
trusted only as a method's own receiver, operators and builtins on tensors are host compute,
and the process is out of reach by any name."""

from __future__ import annotations

import pytest

from search_engine.evaluation.integrity import static_checks as sc

from .conftest import candidate

BASE = candidate("clean_softmax")


def in_forward(code: str) -> str:
    body = "".join(f"        {line}\n" for line in code.splitlines())
    return BASE.replace("    def forward(self, x):\n", "    def forward(self, x):\n" + body, 1)


def at_module(code: str, returns: str | None = None) -> str:
    src = BASE.replace("\n\n@triton.jit", "\n" + code + "\n\n\n@triton.jit", 1)
    return src.replace("return launch(x.contiguous())", returns) if returns else src


def in_init(code: str, returns: str | None = None) -> str:
    body = "".join(f"        {line}\n" for line in code.splitlines())
    src = BASE.replace("class ModelNew(nn.Module):\n", "class ModelNew(nn.Module):\n"
                       "    def __init__(self):\n        super().__init__()\n" + body + "\n", 1)
    return src.replace("return launch(x.contiguous())", returns) if returns else src


def hacks(source: str) -> dict[str, str]:
    return {f.check: f.evidence for f in sc.run_static_checks(source) if f.severity == "hack"}


@pytest.mark.parametrize("source,check", [
    # aliases through containers, subscripts, getattr constants, walrus
    (in_forward("m = [torch.nn.functional][0].torch.os\nm.system('id')"), "static.dynamic_access"),
    (in_forward("m = {'k': torch}['k'].os"), "static.dynamic_access"),
    (in_forward("o = getattr(getattr(torch, 'nn'), 'functional').torch.os"),
     "static.forbidden_attribute"),
    (in_forward("o = [getattr(torch, 'nn')]"), "static.dynamic_access"),
    (in_forward("(t := torch).os"), "static.dynamic_access"),
    (in_forward("d = launch.__dict__"), "static.forbidden_attribute"),
    (in_forward("g = globals()['torch']"), "static.forbidden_call"),
    # process and OS access by any name
    (in_forward("f = launch.posix_spawn"), "static.forbidden_attribute"),
    (at_module("def f(o):\n    return o.mkfifo('/tmp/x')"), "static.forbidden_attribute"),
    (at_module("def f(o):\n    return o.symlink('/etc/shadow', 'log')"),
     "static.forbidden_attribute"),
    (at_module("def f(o):\n    return o.ctypes.CDLL(None)"), "static.forbidden_attribute"),
    # no class-wide __init__ exemption
    (at_module("class Helper:\n    def __init__(self, x):\n        self.y = torch.softmax(x, -1)",
               "return Helper(x).y"), "static.torch_compute"),
    (at_module("class Helper(nn.Module):\n    def __init__(self, x):\n        super().__init__()\n"
               "        self.y = torch.softmax(x, -1)", "return Helper(x).y"),
     "static.torch_compute"),
    (in_init("self.f = lambda x: torch.softmax(x, -1)", "return self.f(x)"),
     "static.torch_compute"),
    (in_init("self.w = torch.load('/etc/passwd')"), "static.forbidden_attribute"),
    (in_init("torch.manual_seed(0)"), "static.forbidden_attribute"),
    (in_init("torch.set_default_dtype(torch.float64)"), "static.forbidden_attribute"),
    # a receiver spelled `self` is not trusted by its spelling
    (at_module("class A:\n    sum = 1\n\ndef helper(self):\n    return self.softmax(-1)",
               "return helper(x)"), "static.torch_compute"),
    (at_module("class A:\n    softmax = 1\n\nclass B:\n    def go(self):\n"
               "        return self.softmax(-1)", "return B.go(x)"), "static.torch_compute"),
    # operators and builtins on tensors
    (in_forward("x = abs(x)"), "static.torch_compute"),
    (in_forward("s = sum([x, x])"), "static.torch_compute"),
    (in_forward("m = max(x, x)"), "static.torch_compute"),
    (in_forward("m = min(x, x)"), "static.torch_compute"),
    (in_forward("p = pow(x, 2)"), "static.torch_compute"),
    (in_forward("x = x ** 2"), "static.torch_compute"),
    (in_forward("x = x + 1"), "static.torch_compute"),
    (in_forward("x = -x"), "static.torch_compute"),
    (in_forward("x *= 2"), "static.torch_compute"),
    (in_forward("q, r = divmod(x, 2)"), "static.torch_compute"),
    (in_forward("s = sorted(x)"), "static.torch_compute"),
    (in_forward("y = x.view(-1)\nz = y.t() @ y"), "static.torch_compute"),
    (at_module("def helper(t):\n    return t * 2", "return launch(helper(x))"),
     "static.torch_compute"),
])
def test_walks_around_the_allow_list_are_flagged(source, check):
    found = hacks(source)
    assert check in found, found


@pytest.mark.parametrize("source", [
    in_forward("n = x.shape[0] * 2 + x.numel() // 4 - x.stride(0)\nb = -x.shape[1]"),
    in_forward("m = max(x.shape[0], 16)\nk = sum(s for s in x.shape)\nr = sorted(x.shape)"),
    in_forward("if x.dim() == 2 and x.dtype == torch.float32:\n    pass"),
    at_module("def grid(meta, n=8):\n    return (n // meta['BLOCK'],)"),
    in_init("self.w = nn.Parameter(torch.randn(4) * 0.5)\nnn.init.normal_(self.w)"),
    at_module("class Box:\n    def __init__(self, n):\n        self.n = n\n\n"
              "    def twice(self):\n        return self.n * 2"),
    at_module("from triton.tools.tensor_descriptor import TensorDescriptor"),
])
def test_honest_code_still_passes(source):
    assert hacks(source) == {}
