"""Round 4, static side: each red-team hole is closed as a class, and the honest shapes of
the same code keep passing. Fast (no subprocess) except the end-to-end runs at the bottom.

1. strings that become code: pure modules are per-name allow-lists (no get_type_hints,
   ForwardRef, singledispatch, make_dataclass, ...), string annotations / typing strings are
   type expressions, format fields do not read attributes, no dunder strings, no
   type(name, bases, ns), no attributes that evaluate or import by name, no private library
   attributes, no patching a kernel's attributes.
2. a torch call that may answer with a tensor (nn.Parameter, torch.Tensor, ...) is a tensor
   receiver.
3. torch compute functions / module classes / modules as values: stored in __init__, put in
   containers, handed to functools.partial, constructed outside __init__, called through
   containers, loops, getattr, helpers, submodule iteration, inheritance.
4. the strict precision check follows jit helpers' positional and keyword arguments, nested
   helpers, defaults, local and module constants, and refuses what it cannot resolve.
5. a kernel launched through a dispatch table (or any name bound to it) is launched.
"""

from __future__ import annotations

import pytest

from search_engine.evaluation.integrity import static_checks as sc

from .conftest import CANDIDATES, candidate

ROUND4 = CANDIDATES / "round4"
BASE = candidate("clean_softmax")


def static_round4(name: str) -> str:
    """The candidate `static_NAME.py`; one the runtime tests share is kept once, as
    `runtime_NAME.py` (the runtime tests run it with the static checks off)."""
    own = ROUND4 / f"static_{name}.py"
    return (own if own.exists() else ROUND4 / f"runtime_{name}.py").read_text()


def in_forward(code: str) -> str:
    body = "".join(f"        {line}\n" for line in code.splitlines())
    return BASE.replace("    def forward(self, x):\n", "    def forward(self, x):\n" + body, 1)


def at_module(code: str, returns: str | None = None) -> str:
    src = BASE.replace("\n\n@triton.jit", "\n" + code + "\n\n\n@triton.jit", 1)
    return src.replace("return launch(x.contiguous())", returns) if returns else src


def in_init(code: str, returns: str | None = None, methods: str = "") -> str:
    body = "".join(f"        {line}\n" for line in code.splitlines())
    extra = "".join(f"    {line}\n" if line else "\n" for line in methods.splitlines())
    src = BASE.replace("class ModelNew(nn.Module):\n", "class ModelNew(nn.Module):\n"
                       "    def __init__(self):\n        super().__init__()\n" + body + "\n"
                       + (extra + "\n" if methods else ""), 1)
    return src.replace("return launch(x.contiguous())", returns) if returns else src


def hacks(source: str, policy: str = "strict") -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in sc.run_static_checks(source, "float32", policy):
        if f.severity == "hack":
            out.setdefault(f.check, []).append(f.evidence)
    return out


def assert_flagged(source: str, check: str, *evidence: str, policy: str = "strict") -> None:
    found = hacks(source, policy)
    assert check in found, found
    for text in evidence:
        assert any(text in e for e in found[check]), (text, found[check])


def assert_clean(source: str, policy: str = "strict") -> None:
    found = hacks(source, policy)
    assert found == {}, found


# -- the red team's reproductions ---------------------------------------------------------

REDTEAM = {
    # name: (check, evidence)
    "typing_eval_numpy": ("static.forbidden_attribute", "get_type_hints"),
    "typing_eval_exec": ("static.string_code", "string annotation"),
    "parameter_receiver": ("static.torch_compute", ".log_softmax"),
    "init_bound_fn": ("static.torch_compute", "torch.log_softmax"),
    "list_literal_module": ("static.torch_compute", "LogSoftmax"),
    "partial_stored_module": ("static.torch_compute", "functools.partial"),
    "modulelist_chunks": ("static.torch_compute", "self.layers[0]"),
    "tf32_helper_positional": ("static.precision_mismatch", "'tf32'"),
}


@pytest.mark.parametrize("name", sorted(REDTEAM))
def test_red_team_candidates_are_refused(name):
    check, evidence = REDTEAM[name]
    assert_flagged(static_round4(name), check, evidence)


@pytest.mark.parametrize("name", ["fp_kernel_table_launch", "fp_linear_submodules",
                                  "fp_honest_shapes"])
def test_honest_round4_candidates_pass_every_policy(name):
    for policy in ("strict", "tf32", "bf16"):
        assert_clean(static_round4(name), policy)


# -- 1. strings that become code ------------------------------------------------------------


@pytest.mark.parametrize("source,evidence", [
    (at_module("import typing\nH = typing.get_type_hints"), "get_type_hints"),
    (at_module("from typing import get_type_hints"), "get_type_hints"),
    (at_module("import typing\nH = getattr(typing, 'get_type_hints')"), "get_type_hints"),
    (at_module("import typing\nt = typing\nH = t.get_type_hints"), "get_type_hints"),
    (at_module("import typing\nR = typing.ForwardRef('1')"), "ForwardRef"),
    (at_module("import typing\nR = typing.get_overloads"), "get_overloads"),
    (at_module("import typing\nR = typing.no_type_check"), "no_type_check"),
    (at_module("import typing\nS = typing.sys"), "typing.sys"),
    (at_module("import functools\nD = functools.singledispatch"), "singledispatch"),
    (at_module("from functools import singledispatchmethod"), "singledispatchmethod"),
    (at_module("import functools\nW = functools.update_wrapper"), "update_wrapper"),
    (at_module("import functools\nW = functools.wraps"), "wraps"),
    (at_module("import functools\nN = functools.namedtuple"), "namedtuple"),
    (at_module("import dataclasses\nM = dataclasses.make_dataclass('M', ['a'])"),
     "make_dataclass"),
    (at_module("import dataclasses\nA = dataclasses.asdict"), "asdict"),
    (at_module("import dataclasses\nF = dataclasses.FunctionType"), "FunctionType"),
    (at_module("def f(o):\n    return o.import_module('os')"), "import_module"),
    (at_module("def f(o):\n    return o.attrgetter('a.b')"), "attrgetter"),
    (in_forward("launch._unsafe_update_src('x')"), "_unsafe_update_src"),
    (in_forward("m = self._modules"), "_modules"),
])
def test_routes_from_strings_to_code_are_refused(source, evidence):
    found = hacks(source)
    hits = found.get("static.forbidden_attribute", []) + found.get("static.forbidden_import", [])
    assert any(evidence in e for e in hits), found


@pytest.mark.parametrize("source,evidence", [
    (at_module("def f(a: \"__import__('os').getcwd()\"):\n    return a"), "string annotation"),
    (at_module("def f(a) -> \"(lambda: 1)()\":\n    return a"), "string annotation"),
    (at_module("X: \"[c for c in 'ab']\" = 1"), "string annotation"),
    (at_module("def f(a: \"torch._C\"):\n    return a"), "private"),
    (at_module("from __future__ import annotations\n\n\ndef f(a: print('x')):\n    return a"),
     "__future__"),
    (at_module("import typing\nT = typing.Optional[\"__import__('os')\"]"), "typing construct"),
    (at_module("import typing\nT = typing.TypeVar('T', bound=\"exec('1')\")"),
     "typing construct"),
    (at_module("from typing import cast\nv = cast(\"open('f')\", 1)"), "typing construct"),
    (in_forward("s = '{0.__class__}'.format(x)"), "__class__"),
    (in_forward("s = '{0:{1.real}}'.format(1, 2)"), "real"),
    (in_forward("fmt = '{}'\ns = fmt.format(x)"), "cannot read"),
    (in_forward("s = str.format('{0.T}', x)"), "'T'"),
    (at_module("def f(g):\n    return type('K', (), {'__getattr__': g})"), "type(name"),
    (at_module("NAME = '__globals__'"), "'__globals__'"),
])
def test_strings_that_could_be_evaluated_are_refused(source, evidence):
    assert_flagged(source, "static.string_code", evidence)


@pytest.mark.parametrize("code", [
    "softmax_kernel.fn = print", "setattr(softmax_kernel, 'src', 'x')",
    "softmax_kernel.cache = {}", "del softmax_kernel.fn", "softmax_kernel.cache[0] = None",
])
def test_patching_a_kernel_is_refused(code):
    assert_flagged(at_module(code).replace("\n" + code + "\n", "\n", 1) + code + "\n",
                   "static.monkeypatch", "softmax_kernel")


@pytest.mark.parametrize("source", [
    at_module("from __future__ import annotations\nfrom typing import Optional, List, Tuple\n\n\n"
              "def f(a: Optional[torch.Tensor] = None, b: 'List[int] | None' = None,\n"
              "      c: tuple[int, ...] = (1,)) -> \"Tuple[int, 'ModelNew']\":\n"
              "    return (1, None)"),
    at_module("def f(a: 'torch.Tensor', n: 'int') -> 'torch.Tensor':\n    return a"),
    at_module("import typing\nMode = typing.Literal['ieee', 'tf32 x3', 'a.b()']\n"
              "T = typing.TypeVar('T', bound='torch.Tensor')\nN = typing.cast('int', 3)"),
    at_module("import dataclasses\n\n\n@dataclasses.dataclass(frozen=True)\nclass Cfg:\n"
              "    block: int = 128\n    name: str = dataclasses.field(default='x')\n\n\n"
              "CFG = dataclasses.replace(Cfg(), block=64)"),
    at_module("import functools\nimport math\n\n\n@functools.lru_cache(maxsize=None)\n"
              "def blocks(n):\n    return functools.reduce(lambda a, b: a * b, (n, 2), 1)\n\n\n"
              "SCALE = math.sqrt(math.pi) * math.e"),
    in_forward("msg = '{} rows, {:.3f} {name}'.format(x.shape[0], 1.5, name='n')\n"
               "tag = f'{x.shape[0]}:{x.dtype}'"),
    at_module("if __name__ == '__main__':\n    pass\n__all__ = ['ModelNew']"),
    at_module("def grid(meta: dict) -> tuple:\n    return (meta['BLOCK'],)"),
])
def test_honest_typing_and_strings_pass(source):
    assert_clean(source)


def test_triton_type_strings_on_jit_parameters_pass():
    src = BASE.replace("def softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):",
                       "def softmax_kernel(x_ptr: '*fp32', y_ptr, n_cols: 'i32', "
                       "BLOCK: 'tl.constexpr'):")
    assert_clean(src)


# -- 2. receivers ---------------------------------------------------------------------------


@pytest.mark.parametrize("code,evidence", [
    ("z = torch.nn.Parameter(x, requires_grad=False).log_softmax(1)", ".log_softmax"),
    ("z = nn.Parameter(x).exp()", ".exp"),
    ("z = torch.Tensor(x).softmax(1)", ".softmax"),
    ("z = nn.Buffer(x).sum(1)", ".sum"),
    ("z = torch.empty_like(x).copy_(x).exp()", ".copy_"),
    ("z = torch.Tensor(x) + 1", "operator"),
])
def test_tensors_made_by_allowed_torch_calls_are_tensor_receivers(code, evidence):
    assert_flagged(in_forward(code), "static.torch_compute", evidence)


def test_non_tensor_torch_calls_stay_exempt():
    assert_clean(in_forward("kind = torch.device('cpu').type\nbig = torch.finfo(x.dtype).max\n"
                            "n = torch.Size([2, 3]).numel()\nok = torch.cuda.is_available()"))


# -- 3. torch compute as a value -------------------------------------------------------------


@pytest.mark.parametrize("source,evidence", [
    # torch functions stored in __init__ (any spelling) and called later
    (in_init("self.f = torch.log_softmax", "return launch(self.f(x, 1))"), "torch.log_softmax"),
    (in_init("self.f = nn.functional.gelu", "return launch(self.f(x))"), "gelu"),
    (in_init("self.f = getattr(torch, 'softmax')", "return launch(self.f(x, 1))"),
     "torch.softmax"),
    (in_init("self.fs = [torch.exp]", "return launch(self.fs[0](x))"), "torch.exp"),
    (in_init("self.f = functools.partial(torch.softmax, dim=1)", "return launch(self.f(x))")
     .replace("import torch\n", "import functools\nimport torch\n", 1), "torch.softmax"),
    (in_init("self.f = torch.Tensor.softmax", "return launch(self.f(x, 1))"),
     "torch.Tensor.softmax"),
    (in_init("self.w = nn.Parameter(torch.ones(2))\nself.f = self.w.exp",
             "return launch(x)"), ".exp"),
    (in_init("self.f = torch.vmap(lambda v: v)", "return launch(self.f(x))"), "torch.vmap"),
    # compute module classes as values
    (in_init("self.cls = nn.LogSoftmax", "return launch(self.cls(1)(x))"), "LogSoftmax"),
    (at_module("LAYERS = (nn.Softmax,)"), "Softmax"),
    # constructed outside __init__
    (in_forward("for stage in [nn.LogSoftmax(dim=1)]:\n    x = stage(x)"), "outside __init__"),
    (at_module("ACT = nn.Softmax(dim=1)", "return launch(ACT(x))"), "outside __init__"),
    # modules in containers, reached however
    (in_init("self.layers = nn.ModuleList([nn.Softmax(dim=1)])",
             "return launch(self.layers[0](x))"), "self.layers[0]"),
    (in_init("self.seq = nn.Sequential(nn.Identity(), nn.Softmax(dim=1))",
             "return launch(self.seq(x))"), "self.seq"),
    (in_init("self.d = nn.ModuleDict({'a': nn.Softmax(dim=1)})",
             "return launch(self.d['a'](x))"), "self.d"),
    (in_init("self.d = nn.ModuleDict({'a': nn.Softmax(dim=1)})",
             "return launch(next(iter(self.d.values()))(x))"), "values"),
    (in_init("self.layers = nn.ModuleList()\nself.layers.append(nn.Softmax(dim=1))",
             "return launch(self.layers[-1](x))"), "self.layers"),
    (in_init("self.add_module('sm', nn.Softmax(dim=1))", "return launch(self.sm(x))"),
     "self.sm"),
    (in_init("setattr(self, 'sm', nn.Softmax(dim=1))", "return launch(self.sm(x))"),
     "self.sm"),
    (in_init("self.norm = nn.LogSoftmax(dim=1)", "return launch(getattr(self, 'norm')(x))"),
     "LogSoftmax"),
    (in_init("self.norm = nn.LogSoftmax(dim=1)",
             "return launch(self.get_submodule('norm')(x))"), "submodule"),
    (in_init("self.norm = nn.LogSoftmax(dim=1)",
             "for m in self.modules():\n            if isinstance(m, nn.LogSoftmax):\n"
             "                x = m(x)\n        return launch(x)"), "m(x)"),
    (in_init("self.norm = nn.LogSoftmax(dim=1)",
             "for _, m in self.named_children():\n            x = m(x)\n        return launch(x)"),
     "m(x)"),
    (in_init("self.norm = nn.LogSoftmax(dim=1)", "return launch(self.pick()(x))",
             methods="def pick(self):\n    return self.norm"), "self.pick()"),
    (in_init("self.norm = nn.LogSoftmax(dim=1)", "return launch(apply_to(self.norm, x))")
     .replace("\n\n@triton.jit", "\n\ndef apply_to(m, v):\n    return m(v)\n\n\n@triton.jit", 1),
     "m(v)"),
    (in_init("self.norm = nn.LogSoftmax(dim=1)", "return launch(list(map(self.norm, [x]))[0])"),
     "map"),
    (in_init("self.norm = nn.LogSoftmax(dim=1)", "return launch((lambda: self.norm)()(x))"),
     "LogSoftmax"),
    (in_init("self.norm = nn.LogSoftmax(dim=1)",
             "BOX['m'] = self.norm\n        return launch(BOX['m'](x))")
     .replace("\n\n@triton.jit", "\nBOX = {}\n\n\n@triton.jit", 1), "BOX['m']"),
    (in_init("self.norm = nn.LogSoftmax(dim=1)", "return launch(self.norm.forward(x))"),
     "forward"),
    (in_init("self.norm = nn.LogSoftmax(dim=1)",
             "for i, m in enumerate([self.norm]):\n            x = m(x)\n        return launch(x)"),
     "m(x)"),
    # a module built from modules in __init__ is still a module: calling it is torch's work
    (in_init("self.tr = nn.TransformerEncoder(nn.TransformerEncoderLayer(d_model=4, nhead=2, "
             "dim_feedforward=8), num_layers=2)", "return launch(self.tr(x))"), "self.tr"),
    # and building one outside __init__ is refused as before
    (in_forward("tr = nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2), 1)"),
     "outside __init__"),
])
def test_torch_compute_reached_as_a_value_is_refused(source, evidence):
    if "functools" in source and "import functools" not in source:
        source = "import functools\n" + source
    assert_flagged(source, "static.torch_compute", evidence)


def with_classes(source: str, classes: str) -> str:
    return source.replace("\n\nclass ModelNew", "\n\n" + classes + "\n\n\nclass ModelNew", 1)


@pytest.mark.parametrize("source,evidence", [
    (in_init("self.norm = nn.LogSoftmax(dim=1)", "return launch(sorted([x], key=self.norm)[0])"),
     "sorted"),
    (in_init("self.norm = nn.LogSoftmax(dim=1)",
             "return launch(type(self.norm).forward(self.norm, x))"), "forward"),
    (with_classes(in_init("self.s = Stack(nn.Softmax(dim=1))", "return launch(self.s(x))"),
                  "class Stack(nn.Sequential):\n    pass"), "self.s"),
    (with_classes(in_init("self.s = Stack()", "return launch(self.s(x))"),
                  "class Stack(nn.Sequential):\n    def __init__(self):\n"
                  "        super().__init__(nn.Softmax(dim=1))"), "self.s"),
    (with_classes(in_init("self.w = Wrap(nn.Softmax(dim=1))", "return launch(self.w(x))"),
                  "class Wrap(nn.Module):\n    def __init__(self, m):\n        super().__init__()\n"
                  "        self.m = m\n\n    def forward(self, x):\n        return self.m(x)"),
     "self.m"),
    (with_classes(in_init("self.box = Box()\nself.box.m = nn.Softmax(dim=1)",
                          "return launch(self.box.m(x))"), "class Box:\n    pass"), "self.box"),
])
def test_modules_wrapped_in_the_candidates_own_objects_are_followed(source, evidence):
    assert_flagged(source, "static.torch_compute", evidence)


@pytest.mark.parametrize("classes,use,evidence", [
    ("class Norm(nn.LogSoftmax):\n    pass", "self.n = Norm(dim=1)|launch(self.n(x))",
     "without its own forward"),
    ("class Norm(nn.LogSoftmax):\n    def forward(self, x):\n        return super().forward(x)",
     "self.n = Norm(dim=1)|launch(self.n(x))", "inherited"),
    ("class Conv(nn.Conv2d):\n    def forward(self, x):\n"
     "        return self._conv_forward(x, self.weight, self.bias)",
     "self.c = Conv(1, 1, 1)|launch(self.c(x))", "_conv_forward"),
])
def test_inherited_torch_compute_is_refused(classes, use, evidence):
    init, ret = use.split("|")
    src = in_init(init, "return " + ret).replace("\n\nclass ModelNew", "\n\n" + classes
                                                 + "\n\n\nclass ModelNew", 1)
    assert_flagged(src, "static.torch_compute", evidence)


@pytest.mark.parametrize("source", [
    # weight holders: constructed in __init__ (or in a helper only __init__ calls), read
    in_init("self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])",
            "for i, layer in enumerate(self.layers):\n            w = layer.weight\n"
            "            b = self.layers[i].bias\n        return launch(x)"),
    in_init("self.fc = nn.Linear(4, 4)", "return launch(use_weights(x, self.fc))")
    .replace("\n\n@triton.jit", "\n\ndef use_weights(v, layer):\n    w = layer.weight\n"
             "    b = layer.bias\n    return v\n\n\n@triton.jit", 1),
    in_init("self.fc = nn.Linear(4, 4)\nself.apply(self._init_weights)\n"
            "for m in self.modules():\n    if isinstance(m, (nn.Linear, nn.Conv2d)):\n"
            "        nn.init.zeros_(m.bias)", methods="def _init_weights(self, m):\n"
            "    if isinstance(m, nn.Linear):\n        nn.init.xavier_uniform_(m.weight)"),
    in_init("self.blocks = self._make_blocks(3)", methods="def _make_blocks(self, n):\n"
            "    return nn.ModuleList([nn.Linear(4, 4) for _ in range(n)])"),
    in_init("self.fc = nn.Linear(4, 4)",
            "n = len(self.fc.weight)\n        for name, m in self.named_children():\n"
            "            assert isinstance(m, nn.Linear) and name\n        return launch(x)"),
    in_init("self.fc = nn.Linear(2, 2)\nfor m in self.modules():\n    if type(m) is nn.Linear:\n"
            "        nn.init.zeros_(m.bias)"),
    in_init("self.w = nn.Parameter(torch.randn(4) * 0.1)\nself.s = torch.rand(4)\n"
            "self.register_buffer('b', torch.zeros(4))", "return launch(x)"),
    # a torch module built from modules in __init__ (the offline synthesizer keeps a
    # TransformerEncoder for its parameters): its layers are copied, never run
    in_init("self.tr = nn.TransformerEncoder(nn.TransformerEncoderLayer(d_model=4, nhead=2, "
            "dim_feedforward=8), num_layers=2)",
            "w = self.tr.layers[0].linear1.weight\n        return launch(x)"),
])
def test_honest_weight_holders_pass(source):
    assert_clean(source)


def test_own_modules_in_containers_pass():
    own = ("class Stage(nn.Module):\n    def forward(self, x):\n        return launch(x)\n\n\n"
           "class Wrapped(nn.Linear):\n    def forward(self, x):\n        return launch(x)")
    src = in_init("self.stages = nn.ModuleList([Stage(), Stage()])\n"
                  "self.seq = nn.Sequential(Stage(), Wrapped(4, 4))\n"
                  "self.d = nn.ModuleDict({'a': Stage()})",
                  "for stage in self.stages:\n            x = stage(x)\n"
                  "        x = self.d['a'](self.seq(x))\n        return x")
    src = src.replace("\n\nclass ModelNew", "\n\n" + own + "\n\n\nclass ModelNew", 1)
    assert_clean(src)


# -- 4. precision through helpers ------------------------------------------------------------

MATMUL = '''
import torch
import triton
import triton.language as tl
from torch import nn

PREC_GLOBAL{global_annotation} = {global_value}


@triton.jit
def _mm(a, b, PREC: tl.constexpr = "ieee"):
    return tl.dot(a, b, input_precision=PREC)


@triton.jit
def _mm2(a, b, P2: tl.constexpr):
    return _mm(a, b, P2)


@triton.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, N: tl.constexpr, OUTER: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r[:, None] * N + r[None, :])
    b = tl.load(b_ptr + r[:, None] * N + r[None, :])
    {body}
    tl.store(c_ptr + r[:, None] * N + r[None, :], c)


class ModelNew(nn.Module):
    def forward(self, a, b):
        c = torch.empty_like(a)
        mm_kernel[(1,)](a, b, c, N=a.shape[0], OUTER={outer})
        return c
'''


def matmul(body: str, outer: str = "'ieee'", global_value: str = "'ieee'",
           global_annotation: str = "") -> str:
    return MATMUL.format(body=body, outer=outer, global_value=global_value,
                         global_annotation=global_annotation)


@pytest.mark.parametrize("source", [
    matmul("c = _mm(a, b, 'tf32')"),                       # positional
    matmul("c = _mm(a, b, PREC='tf32')"),                  # keyword
    matmul("c = _mm2(a, b, 'tf32')"),                      # through a nested helper
    matmul("c = _mm2(a, b, OUTER)", outer="'tf32'"),       # a launch value, two helpers down
    matmul("c = _mm(a, b, OUTER)", outer="'tf' + '32'"),   # computed at the launch
    matmul("c = _mm(a, b, PREC_GLOBAL)", global_value="'tf32'"),
    matmul("p = 'tf32'\n    c = _mm(a, b, p)"),           # a local
    matmul("c = _mm(a, b, 'ieee' if N > 16 else 'tf32')"),
    matmul("c = _mm(*(a, b, 'ieee'))"),                    # unpacked: out of sight
    matmul("f = _mm\n    c = f(a, b, 'ieee')").replace(   # the helper handed around
        "def mm_kernel", "def other(a, b):\n    return (_mm, a)[0](a, b, 'tf32')\n\n\n"
        "@triton.jit\ndef mm_kernel"),
])
def test_strict_precision_follows_helpers(source):
    assert_flagged(source, "static.precision_mismatch")


@pytest.mark.parametrize("source", [
    matmul("c = _mm(a, b)"),                               # the default
    matmul("c = _mm(a, b, 'tf32x3')"),
    matmul("c = _mm2(a, b, OUTER)", outer="'tf32x3'"),
    matmul("c = _mm(a, b, PREC_GLOBAL)", global_annotation=": tl.constexpr",
           global_value="tl.constexpr('ieee')"),
    matmul("p = 'ieee'\n    c = _mm(a, b, p)"),
    matmul("c = _mm(a, b, 'ieee' if N > 16 else 'tf32x3')"),
])
def test_strict_precision_accepts_resolved_fp32_values(source):
    assert "static.precision_mismatch" not in hacks(source)


def test_the_tf32_policy_accepts_tf32_through_helpers():
    assert "static.precision_mismatch" not in hacks(matmul("c = _mm(a, b, 'tf32')"), "tf32")


# -- 5. kernels launched through tables and names ---------------------------------------------


@pytest.mark.parametrize("launch", [
    "KERNELS['k'][(x.shape[0],)]",
    "[softmax_kernel][0][(x.shape[0],)]",
    "(softmax_kernel if x.shape[1] > 0 else softmax_kernel)[(x.shape[0],)]",
])
def test_kernels_launched_through_expressions_count_as_launched(launch):
    src = BASE.replace("softmax_kernel[(x.shape[0],)]", launch).replace(
        "\n\ndef launch", "\n\nKERNELS = {'k': softmax_kernel}\n\n\ndef launch", 1)
    assert "static.kernel_never_launched" not in hacks(src)


def test_a_kernel_bound_to_self_and_launched_counts():
    src = BASE.replace("class ModelNew(nn.Module):\n    def forward(self, x):\n"
                       "        return launch(x.contiguous())",
                       "class ModelNew(nn.Module):\n    def __init__(self):\n"
                       "        super().__init__()\n        self.kernel = softmax_kernel\n\n"
                       "    def forward(self, x):\n        y = torch.empty_like(x)\n"
                       "        self.kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK=128)\n"
                       "        return y")
    assert "static.kernel_never_launched" not in hacks(src)


def test_a_kernel_only_stored_is_still_never_launched():
    src = BASE.replace("softmax_kernel[(x.shape[0],)]", "print").replace(
        "\n\ndef launch", "\n\nKERNELS = {'k': softmax_kernel}\n\n\ndef launch", 1)
    assert "static.kernel_never_launched" in hacks(src)


# -- end to end on the interpreter ------------------------------------------------------------


@pytest.mark.parametrize("name", ["fp_kernel_table_launch", "fp_honest_shapes"])
def test_honest_round4_candidates_are_correct_end_to_end(run_eval, name):
    r = run_eval(static_round4(name), timeout_s=240.0)
    assert r.status == "correct", (r.message, [(f.check, f.evidence) for f in r.integrity_flags])


@pytest.mark.parametrize("name", ["init_bound_fn", "typing_eval_exec"])
def test_red_team_candidates_are_refused_end_to_end(run_eval, name):
    r = run_eval(static_round4(name), timeout_s=240.0)
    assert r.status == "hack_suspected", (r.status, r.message)
    assert any(f.check.startswith("static.") for f in r.integrity_flags)

