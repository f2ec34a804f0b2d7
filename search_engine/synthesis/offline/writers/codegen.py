"""Pieces every offline family shares when it writes a candidate's Triton source: pointwise
ops as Triton expressions, operand addressing (full, broadcast, scalar), the `Kernel` text
builder, the forward() prefix, and the candidate file around the kernels (`assemble`).

The families themselves: elementwise.py, rows.py, matmul.py. All arithmetic is done in fp32
and cast to the output dtype on store.
"""

from __future__ import annotations

import keyword
import math
import textwrap

from search_engine.synthesis.base import NotCoveredError
from search_engine.synthesis.offline.frontend.ir import BINARY, LEAVES, Analysis, Const, IRNode
from search_engine.synthesis.offline.writers import layout_copy
from search_engine.synthesis.offline.writers.model_structure import model_init_source

NEG_INF = "float('-inf')"
POS_INF = "float('inf')"


def next_pow2(n: int) -> int:
    return 1 << max(0, int(n - 1).bit_length())


def lit(value: float) -> str:
    if math.isinf(value):
        return POS_INF if value > 0 else NEG_INF
    if math.isnan(value):
        return "float('nan')"
    return repr(float(value))


# -- pointwise ops --------------------------------------------------------------------------

def tanh_code(x: str) -> str:
    """tanh(x) as Triton code (through the sigmoid: no tanh in tl)."""
    return f"(2.0 * tl.sigmoid(2.0 * ({x})) - 1.0)"


def _round_bf16(x: str) -> str:
    """fp32 → bf16 → fp32, round to nearest even on the bits (the interpreter's own bf16
    conversion does not round as the GPU and torch do)."""
    bits = f"({x}).to(tl.uint32, bitcast=True)"
    return f"(((({bits} + 0x7FFF + (({bits} >> 16) & 1)) >> 16) << 16).to(tl.float32, bitcast=True))"


def _softplus(x: str, beta: float = 1.0, threshold: float = 20.0) -> str:
    bx = f"({x}) * {lit(beta)}"
    stable = f"(tl.maximum({bx}, 0.0) + tl.log(1.0 + tl.exp(-tl.abs({bx})))) / {lit(beta)}"
    return f"tl.where({bx} > {lit(threshold)}, ({x}), {stable})"


def pointwise(node: IRNode, a: list[str]) -> str:
    """The Triton expression for one pointwise IR node over operand expressions `a`."""
    op, at = node.op, node.attrs
    x = a[0] if a else ""
    if op in BINARY:
        y = a[1]
        if op in ("pow", "fmod", "remainder"):
            return {"pow": _pow_tensor, "fmod": _fmod, "remainder": _remainder}[op](node, x, y)
        return {
            "add": f"({x} + {y})", "sub": f"({x} - {y})", "mul": f"({x} * {y})",
            "div": f"({x} / {y})", "maximum": f"tl.maximum({x}, {y})",
            "minimum": f"tl.minimum({x}, {y})",
        }[op]
    simple = {
        "relu": f"tl.maximum({x}, 0.0)", "sigmoid": f"tl.sigmoid({x})", "tanh": tanh_code(x),
        "exp": f"tl.exp({x})", "log": f"tl.log({x})", "sqrt": f"tl.sqrt({x})",
        "rsqrt": f"tl.rsqrt({x})", "abs": f"tl.abs({x})", "neg": f"(-({x}))",
        "square": f"({x} * {x})", "reciprocal": f"(1.0 / ({x}))", "sin": f"tl.sin({x})",
        "cos": f"tl.cos({x})", "log1p": f"tl.log(1.0 + ({x}))", "expm1": f"(tl.exp({x}) - 1.0)",
        "gelu": f"(0.5 * ({x}) * (1.0 + tl.erf(({x}) * 0.7071067811865476)))",
        "gelu_tanh": f"(0.5 * ({x}) * (1.0 + "
        + tanh_code(f"0.7978845608028654 * (({x}) + 0.044715 * ({x}) * ({x}) * ({x}))") + "))",
        "silu": f"(({x}) * tl.sigmoid({x}))",
        "round_fp16": f"({x}).to(tl.float16).to(tl.float32)",
        "round_bf16": _round_bf16(x),
        "hardsigmoid": f"tl.minimum(tl.maximum(({x}) / 6.0 + 0.5, 0.0), 1.0)",
        "hardswish": f"(({x}) * tl.minimum(tl.maximum(({x}) / 6.0 + 0.5, 0.0), 1.0))",
        "mish": f"(({x}) * {tanh_code(_softplus(x))})",
        "selu": f"(1.0507009873554805 * tl.where(({x}) > 0.0, ({x}), "
        f"1.6732632423543772 * (tl.exp({x}) - 1.0)))",
    }
    if op in simple:
        return simple[op]
    if op == "softplus":
        return _softplus(x, at["beta"], at["threshold"])
    if op == "elu":
        return f"tl.where(({x}) > 0.0, ({x}), {lit(at['alpha'])} * (tl.exp({x}) - 1.0))"
    if op == "celu":
        alpha = lit(at["alpha"])
        return f"tl.where(({x}) > 0.0, ({x}), {alpha} * (tl.exp(({x}) / {alpha}) - 1.0))"
    if op == "logsigmoid":  # min(x, 0) - log(1 + exp(-|x|)): no overflow either side
        return f"(tl.minimum({x}, 0.0) - tl.log(1.0 + tl.exp(-tl.abs({x}))))"
    if op == "hardshrink":
        return f"tl.where(tl.abs({x}) > {lit(at['lambd'])}, ({x}), 0.0)"
    if op == "threshold":
        return f"tl.where(({x}) > {lit(at['threshold'])}, ({x}), {lit(at['value'])})"
    if op == "leaky_relu":
        return f"tl.where(({x}) >= 0.0, ({x}), {lit(at['slope'])} * ({x}))"
    if op == "clamp":
        out = x
        if at.get("lo") is not None:
            out = f"tl.maximum({out}, {lit(at['lo'])})"
        if at.get("hi") is not None:
            out = f"tl.minimum({out}, {lit(at['hi'])})"
        return out
    if op == "powc":
        return _pow(x, at["exponent"])
    raise NotCoveredError("no Triton template for this op", [op])


def _pow(x: str, e: float) -> str:
    if e == 0.5:
        return f"tl.sqrt({x})"
    if e == -0.5:
        return f"tl.rsqrt({x})"
    if float(e).is_integer() and 0 < abs(e) <= 8:
        prod = " * ".join([f"({x})"] * int(abs(e)))
        return f"({prod})" if e > 0 else f"(1.0 / ({prod}))"
    if e == 0:  # 1 everywhere, NaN and inf bases too, as torch.pow
        return f"tl.where(({x}) == ({x}), 1.0, 1.0)"
    return _pow_general(x, lit(e), float(e).is_integer(), float(e) % 2 == 1, exponent_zero=False)


def _pow_general(x: str, e: str, integer, odd, abs_x: str | None = None,
                 exponent_zero: bool = True) -> str:
    """x ** e as torch computes it: |x| ** e through exp2/log2, negative bases signed for odd
    integer exponents and NaN for fractional ones, x ** 0 == 1. `integer` and `odd` are
    Python bools (a constant exponent: no test in the kernel) or Triton expressions."""
    magnitude = f"tl.exp2(({e}) * tl.log2({abs_x or f'tl.abs({x})'}))"
    if integer is False:
        negative = "float('nan')"
    else:
        signed = f"-{magnitude}" if odd is True else magnitude if odd is False \
            else f"tl.where({odd}, -{magnitude}, {magnitude})"
        negative = signed if integer is True else f"tl.where({integer}, {signed}, float('nan'))"
    out = f"tl.where(({x}) < 0.0, {negative}, {magnitude})"
    return f"tl.where(({e}) == 0.0, 1.0, {out})" if exponent_zero else out


def _pow_tensor(node: IRNode, x: str, y: str) -> str:
    base = node.operands[0]
    if isinstance(base, Const):  # c ** y: one logarithm, folded here
        if base.value > 0:
            return f"tl.exp2(({y}) * {lit(math.log2(base.value))})"
        if base.value == 0:
            return f"tl.where(({y}) == 0.0, 1.0, tl.where(({y}) > 0.0, 0.0, {POS_INF}))"
    integer = f"(tl.math.floor({y}) == ({y}))"
    odd = f"({integer} & ((tl.math.floor(({y}) * 0.5) * 2.0) != ({y})))"
    return _pow_general(x, y, integer, odd, _abs(node, 0, x))


def _fmod(node: IRNode, x: str, y: str) -> str:
    """x - y * trunc(x / y), then moved back by |y| where the rounded quotient overshot
    (the remainder has the dividend's sign, as C fmod)."""
    q = f"(({x}) / ({y}))"
    r = f"(({x}) - ({y}) * tl.where({q} >= 0.0, tl.math.floor({q}), tl.math.ceil({q})))"
    size = _abs(node, 1, y)
    return f"tl.where({r} * ({x}) < 0.0, {r} + tl.where(({x}) < 0.0, -{size}, {size}), {r})"


def _abs(node: IRNode, position: int, text: str) -> str:
    """|operand|, folded for a constant (tl.abs takes tensors only)."""
    value = node.operands[position]
    return lit(abs(value.value)) if isinstance(value, Const) else f"tl.abs({text})"


def _remainder(node: IRNode, x: str, y: str) -> str:
    """x - y * floor(x / y), moved by y where it does not have the divisor's sign (Python %)."""
    r = f"(({x}) - ({y}) * tl.math.floor(({x}) / ({y})))"
    divisor = node.operands[1]
    if isinstance(divisor, Const):  # the divisor's sign known here
        wrong_sign = f"({r} < 0.0)" if divisor.value > 0 else f"({r} > 0.0)"
    else:
        wrong_sign = f"(({r} != 0.0) & (({r} < 0.0) != (({y}) < 0.0)))"
    return f"tl.where({wrong_sign}, {r} + ({y}), {r})"


def operand(arg, names: dict[int, str]) -> str:
    return lit(arg.value) if isinstance(arg, Const) else names[arg]


# -- shared pieces of a candidate ----------------------------------------------------------

def unravel(flat: str, sizes: list[str], prefix: str) -> list[str]:
    """Lines computing coordinates `{prefix}{i}` of `flat` over row-major `sizes`."""
    lines, rem = [], flat
    for i in range(len(sizes) - 1, -1, -1):
        lines.append(f"{prefix}{i} = ({rem}) % {sizes[i]}")
        if i:
            lines.append(f"{prefix}r{i} = ({rem}) // {sizes[i]}")
            rem = f"{prefix}r{i}"
    return lines


def leaf_kind(shape: tuple[int, ...], full: tuple[int, ...]) -> str:
    if tuple(shape) == tuple(full):
        return "full"
    if math.prod(shape) == 1:
        return "scalar"
    return "bcast"


def varying_dims(shape: tuple[int, ...], full: tuple[int, ...]) -> list[int]:
    """Dims of `full` along which a broadcast operand of `shape` actually changes."""
    padded = (1,) * (len(full) - len(shape)) + tuple(shape)
    return [d for d, s in enumerate(padded) if s != 1 and full[d] != 1]


def leaf_expr(node: IRNode, args: list[str]) -> str:
    """How forward() names an input or parameter."""
    if node.op == "input":
        return args[node.attrs["index"]]
    return attribute_expr(node.attrs["path"])


def attribute_expr(path: str, root: str = "self") -> str:
    """`root` followed by a dotted parameter or module path, valid Python for every part: a
    container's numeric or keyword child (`nn.Sequential`'s "0", a ModuleDict's "lambda")
    is reached with getattr, which nn.Module resolves for any registered name."""
    expr = root
    for part in path.split("."):
        if part.isidentifier() and not keyword.iskeyword(part):
            expr += f".{part}"
        else:
            expr = f"getattr({expr}, {part!r})"
    return expr


class Kernel:
    def __init__(self, name: str):
        self.name = name
        self.params: list[str] = []
        self.body: list[str] = []

    def source(self) -> str:
        head = f"@triton.jit\ndef {self.name}(\n"
        head += "".join(f"    {p},\n" for p in self.params) + "):\n"
        return head + textwrap.indent("\n".join(self.body), "    ") + "\n"


def an_extra_leaves(an: Analysis) -> set[int]:
    return getattr(an, "_extra_leaves", set())


# -- forward() pieces shared by the families ----

def args_of(an: Analysis) -> list[str]:
    return an.input_names or [f"x{i}" for i in range(an.input_count)]


def leaf_prefix(an: Analysis, ids, full_shape) -> list[str]:
    lines = []
    for i in ids:
        node = an.nodes[i]
        if node.op in LEAVES and not node.attrs.get("temp"):
            expr = leaf_expr(node, args_of(an))
            suffix = ".contiguous()" if tuple(node.shape) == tuple(full_shape) else ""
            lines.append(f"kh_t{i} = {expr}{suffix}")
    return lines


def device_expr(an: Analysis) -> str:
    return f"{args_of(an)[0]}.device" if an.input_count else "'cuda'"



# -- the candidate file --------------------------------------------------------------------

def assemble(problem_source: str, an: Analysis, kernels: list[Kernel], forward: list[str],
             header: str) -> str:
    init, extras = model_init_source(problem_source)
    parts = [f'"""{header}"""', "import torch", "import torch.nn as nn", "import triton",
             "import triton.language as tl", ""]
    parts += [e for e in extras if e] + ([""] if extras else [])
    parts += ["", shape_contract(an), ""]
    if layout_copy.needed(forward):
        parts += [layout_copy.SOURCE]
    for kernel in kernels:
        parts += ["", kernel.source()]
    args = an.input_names or [f"x{i}" for i in range(an.input_count)]
    parts += ["", "class ModelNew(nn.Module):", textwrap.indent(init, "    ").rstrip("\n"), "",
              f"    def forward(self, {', '.join(args)}):"]
    parts += ["        " + line for line in shape_guard(an, args) + forward]
    return "\n".join(parts) + "\n"


def shape_inputs(an: Analysis, args: list[str]) -> list[tuple[str, tuple[int, ...]]]:
    """(argument name, shape) of each tensor input forward() checks (scalars have none)."""
    return [(args[n.attrs["index"]], tuple(n.shape)) for n in an.topo()
            if n.op == "input" and not n.attrs.get("scalar")
            and 0 <= n.attrs.get("index", -1) < len(args)]


def shape_guard(an: Analysis, args: list[str]) -> list[str]:
    """forward()'s first lines: each input checked against the shape the kernels take."""
    return [f"kh_expect_shape({name!r}, {name}, {shape!r})"
            for name, shape in shape_inputs(an, args)]


CONTRACT_START = "# -- shape contract (written by KernelHub) --"
CONTRACT_END = "# -- end of shape contract --"
_EXPECT_SHAPE = '''

def kh_expect_shape(name, tensor, expected):
    """Refuse, with the shapes this module takes, an input its kernels were not made for."""
    if tuple(tensor.shape) == tuple(expected):
        return
    got = tuple(tensor.shape)
    if KH_ANY_BATCH:
        raise ValueError(f"ModelNew takes {name} of shape {KH_TAKES[name]} for any batch "
                         f"size B (generated for {KH_GENERATED_FOR[name]}), got {got}")
    raise ValueError(f"generated for {name} of shape {KH_GENERATED_FOR[name]}, got {got}: "
                     f"this module's kernels have their sizes fixed and were verified only "
                     f"at that shape")
'''


def shape_contract(an: Analysis, batch_inputs: set[str] | None = None) -> str:
    """The module-level statement of the shapes the kernels take: the shapes they were
    generated for and, when `batch_inputs` (names) may vary their leading dim, that they
    take any batch size there."""
    shapes = shape_inputs(an, args_of(an))
    batch_inputs = batch_inputs or set()
    takes = {name: "(" + ", ".join(["B", *map(str, shape[1:])] if name in batch_inputs
                                   else map(str, shape)) + ("," if len(shape) == 1 else "")
             + ")" for name, shape in shapes}
    return "\n".join([CONTRACT_START, f"KH_GENERATED_FOR = {dict(shapes)!r}",
                      f"KH_TAKES = {takes!r}", f"KH_ANY_BATCH = {bool(batch_inputs)!r}"]) \
        + _EXPECT_SHAPE + CONTRACT_END
