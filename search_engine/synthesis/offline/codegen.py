"""Write a candidate's Triton source from an `Analysis` and a template's parameters.

Three templates, one per family; each returns the kernels and the forward body:

- elementwise: one 1-D kernel; every operand is loaded once, the whole op DAG is fused.
- rows: one program per ``ROWS`` rows. ``single`` keeps a whole row in registers
  (``BLOCK_R`` = next power of two ≥ row length); ``looped`` streams the row in chunks of
  ``BLOCK_R``, one pass per reduction (values are recomputed, never stored), then a last
  pass for the output.
- matmul: a tiled ``tl.dot`` kernel with group-M swizzle, stages, warps and split-K; the
  epilogue (bias, pointwise chain) is fused on the accumulator; reductions after the matmul
  run in a second, generated rows kernel over the fused result. With split-K the partial
  products are accumulated atomically into an fp32 workspace and the epilogue runs in its
  own kernel.

All arithmetic is done in fp32 and cast to the output dtype on store.
"""

from __future__ import annotations

import ast
import math
import textwrap

from search_engine.synthesis.base import NotCoveredError
from search_engine.synthesis.offline.analysis import (
    BINARY, LEAVES, REDUCTIONS, Analysis, Const, IRNode,
)

NEG_INF = "float('-inf')"
POS_INF = "float('inf')"


def next_pow2(n: int) -> int:
    return 1 << max(0, int(n - 1).bit_length())


def lit(value: float) -> str:
    if math.isinf(value):
        return POS_INF if value > 0 else NEG_INF
    return repr(float(value))


# -- pointwise ops --------------------------------------------------------------------------

def _tanh(x: str) -> str:
    return f"(2.0 * tl.sigmoid(2.0 * ({x})) - 1.0)"


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
        return {
            "add": f"({x} + {y})", "sub": f"({x} - {y})", "mul": f"({x} * {y})",
            "div": f"({x} / {y})", "maximum": f"tl.maximum({x}, {y})",
            "minimum": f"tl.minimum({x}, {y})",
        }[op]
    simple = {
        "relu": f"tl.maximum({x}, 0.0)", "sigmoid": f"tl.sigmoid({x})", "tanh": _tanh(x),
        "exp": f"tl.exp({x})", "log": f"tl.log({x})", "sqrt": f"tl.sqrt({x})",
        "rsqrt": f"tl.rsqrt({x})", "abs": f"tl.abs({x})", "neg": f"(-({x}))",
        "square": f"({x} * {x})", "reciprocal": f"(1.0 / ({x}))", "sin": f"tl.sin({x})",
        "cos": f"tl.cos({x})", "log1p": f"tl.log(1.0 + ({x}))", "expm1": f"(tl.exp({x}) - 1.0)",
        "gelu": f"(0.5 * ({x}) * (1.0 + tl.erf(({x}) * 0.7071067811865476)))",
        "gelu_tanh": f"(0.5 * ({x}) * (1.0 + "
        + _tanh(f"0.7978845608028654 * (({x}) + 0.044715 * ({x}) * ({x}) * ({x}))") + "))",
        "silu": f"(({x}) * tl.sigmoid({x}))",
        "hardsigmoid": f"tl.minimum(tl.maximum(({x}) / 6.0 + 0.5, 0.0), 1.0)",
        "hardswish": f"(({x}) * tl.minimum(tl.maximum(({x}) / 6.0 + 0.5, 0.0), 1.0))",
        "mish": f"(({x}) * {_tanh(_softplus(x))})",
        "selu": f"(1.0507009873554805 * tl.where(({x}) > 0.0, ({x}), "
        f"1.6732632423543772 * (tl.exp({x}) - 1.0)))",
    }
    if op in simple:
        return simple[op]
    if op == "softplus":
        return _softplus(x, at["beta"], at["threshold"])
    if op == "elu":
        return f"tl.where(({x}) > 0.0, ({x}), {lit(at['alpha'])} * (tl.exp({x}) - 1.0))"
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
    raise NotCoveredError(f"pow with exponent {e}", ["pow"])


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
    return "self." + node.attrs["path"]


class Kernel:
    def __init__(self, name: str):
        self.name = name
        self.params: list[str] = []
        self.body: list[str] = []

    def source(self) -> str:
        head = f"@triton.jit\ndef {self.name}(\n"
        head += "".join(f"    {p},\n" for p in self.params) + "):\n"
        return head + textwrap.indent("\n".join(self.body), "    ") + "\n"


# -- elementwise ---------------------------------------------------------------------------

def elementwise_kernel(an: Analysis, ids: list[int], out_id: int, shape, name: str,
                       args: list[str], launch_prefix: list[str], out_var: str,
                       params: dict) -> tuple[Kernel, list[str]]:
    """A fused 1-D kernel computing node `out_id` over `shape`; returns kernel and launch."""
    k = Kernel(name)
    nodes = an.nodes
    leaves = [i for i in ids if nodes[i].op in LEAVES or i in an_extra_leaves(an)]
    k.params.append("out_ptr")
    call = [out_var]
    rank = len(shape)
    for i in leaves:
        k.params.append(f"in{i}_ptr")
        call.append(f"kh_t{i}")
    k.params.append("n_elements")
    call.append(f"{out_var}.numel()")
    needs = set()
    for i in leaves:
        if leaf_kind(nodes[i].shape, shape) == "bcast":
            for d in varying_dims(nodes[i].shape, shape):
                needs.add(d)
                k.params.append(f"s{i}_{d}")
                call.append(f"kh_st{i}[{d}]")
    for d in range(rank):
        k.params.append(f"D{d}: tl.constexpr")
        call.append(f"{out_var}.shape[{d}]" if rank else "1")
    k.params.append("BLOCK: tl.constexpr")
    body = k.body
    body.append("pid = tl.program_id(0)")
    body.append("offs = pid * BLOCK + tl.arange(0, BLOCK)")
    body.append("mask = offs < n_elements")
    if needs:
        body.extend(unravel("offs", [f"D{d}" for d in range(rank)], "c"))
    names: dict[int, str] = {}
    for i in ids:
        node = nodes[i]
        if i in leaves:
            kind = leaf_kind(node.shape, shape)
            if kind == "full":
                body.append(f"v{i} = tl.load(in{i}_ptr + offs, mask=mask, other=0.0)"
                            ".to(tl.float32)")
            elif kind == "scalar":
                body.append(f"v{i} = tl.load(in{i}_ptr).to(tl.float32)")
            else:
                off = " + ".join(f"c{d} * s{i}_{d}" for d in varying_dims(node.shape, shape))
                body.append(f"v{i} = tl.load(in{i}_ptr + {off}, mask=mask, other=0.0)"
                            ".to(tl.float32)")
        else:
            body.append(f"v{i} = " + pointwise(node, [operand(a, names) for a in node.operands]))
        names[i] = f"v{i}"
    body.append(f"tl.store(out_ptr + offs, v{out_id}.to(out_ptr.dtype.element_ty), mask=mask)")
    launch = list(launch_prefix)
    for i in leaves:
        if leaf_kind(nodes[i].shape, shape) == "bcast":
            launch.append(f"kh_st{i} = kh_t{i}.expand({out_var}.shape).stride()")
    block = params["BLOCK"]
    launch.append(f"kh_grid = (triton.cdiv({out_var}.numel(), {block}),)")
    launch.append(f"{name}[kh_grid](" + ", ".join(call) + f", BLOCK={block}, "
                  f"num_warps={params['num_warps']})")
    return k, launch


def an_extra_leaves(an: Analysis) -> set[int]:
    return getattr(an, "_extra_leaves", set())


# -- rows ----------------------------------------------------------------------------------

class RowsWriter:
    """Writes one rows kernel for the nodes `ids` of `an` (reductions over `an.reduce_dims`)."""

    def __init__(self, an: Analysis, ids: list[int], out_id: int, name: str, params: dict):
        self.an, self.ids, self.out_id, self.name, self.p = an, ids, out_id, name, params
        self.nodes = an.nodes
        self.shape = tuple(an.row_shape)
        self.d0, self.d1 = an.reduce_dims[0], an.reduce_dims[-1]
        self.leaves = [i for i in ids if self.nodes[i].op in LEAVES or i in an_extra_leaves(an)]
        self.level = self._levels()

    def _levels(self) -> dict[int, str]:
        level = {}
        for i in self.ids:
            node = self.nodes[i]
            if i in self.leaves:
                level[i] = "full"
            elif node.op in REDUCTIONS:
                level[i] = "row"
            else:
                level[i] = "full" if any(level[r] == "full" for r in node.refs()) else "row"
        return level

    def kernel(self) -> Kernel:
        k = Kernel(self.name)
        k.params += ["out_ptr"] + [f"in{i}_ptr" for i in self.leaves]
        k.params += ["n_rows", "R", "INNER"]
        for i in self.leaves:
            if leaf_kind(self.nodes[i].shape, self.shape) == "bcast":
                k.params += [f"s{i}_{d}" for d in varying_dims(self.nodes[i].shape, self.shape)]
        k.params += [f"D{d}: tl.constexpr" for d in range(len(self.shape))]
        k.params += ["ROWS: tl.constexpr", "BLOCK_R: tl.constexpr"]
        b = k.body
        b.append("pid = tl.program_id(0)")
        b.append("rows = pid * ROWS + tl.arange(0, ROWS)[:, None]")
        b.append("row_mask = rows < n_rows")
        b.append("outer = rows // INNER")
        b.append("inner = rows % INNER")
        b.append("base = outer * R * INNER + inner")
        if any(self._needs_group(g) for g in ("outer", "inner")):
            b.extend(self._coords("outer"))
            b.extend(self._coords("inner"))
        if self.p.get("variant", "single") == "single":
            self._single(b)
        else:
            self._looped(b)
        return k

    # coordinates ----------------------------------------------------------------------
    def _group(self, which):
        rank = len(self.shape)
        return {"outer": range(0, self.d0), "red": range(self.d0, self.d1 + 1),
                "inner": range(self.d1 + 1, rank)}[which]

    def _needs_group(self, which) -> bool:
        group = set(self._group(which))
        return any(leaf_kind(self.nodes[i].shape, self.shape) == "bcast"
                   and group & set(varying_dims(self.nodes[i].shape, self.shape))
                   for i in self.leaves)

    def _coords(self, which, flat=None) -> list[str]:
        dims = list(self._group(which))
        if not dims or not self._needs_group(which):
            return []
        flat = flat or which
        lines = unravel(flat, [f"D{d}" for d in dims], f"{which}_c")
        # rename local indices to absolute dims
        return [line.replace(f"{which}_c", f"{which}_c_") for line in lines] + [
            f"c{d} = {which}_c_{j}" for j, d in enumerate(dims)]

    def _load(self, i: int, cols: str, mask: str) -> str:
        node = self.nodes[i]
        kind = leaf_kind(node.shape, self.shape)
        if kind == "full":
            return f"tl.load(in{i}_ptr + base + {cols} * INNER, mask={mask}, other=0.0)" \
                   ".to(tl.float32)"
        if kind == "scalar":
            return f"tl.load(in{i}_ptr).to(tl.float32)"
        off = " + ".join(f"c{d} * s{i}_{d}" for d in varying_dims(node.shape, self.shape))
        return f"tl.load(in{i}_ptr + {off}, mask={mask}, other=0.0).to(tl.float32)"

    def _emit_full(self, b, targets: set[int], names: dict, cols: str, mask: str):
        """Emit the full-level nodes needed for `targets` (recomputed from loads)."""
        needed, stack = set(), list(targets)
        while stack:
            i = stack.pop()
            if i in needed or i in names:
                continue
            needed.add(i)
            stack.extend(r for r in self.nodes[i].refs() if r not in names)
        if self._needs_group("red") and any(i in self.leaves for i in needed):
            b.extend(self._coords("red", flat=cols))
        local = dict(names)
        for i in self.ids:
            if i not in needed:
                continue
            node = self.nodes[i]
            if i in self.leaves:
                b.append(f"f{i} = {self._load(i, cols, mask)}")
            else:
                b.append(f"f{i} = " + pointwise(node, [operand(a, local)
                                                       for a in node.operands]))
            local[i] = f"f{i}"
        return local

    def _single(self, b):
        b.append("cols = tl.arange(0, BLOCK_R)[None, :]")
        b.append("mask = row_mask & (cols < R)")
        names: dict[int, str] = {}
        for i in self.ids:
            node = self.nodes[i]
            if node.op in REDUCTIONS:
                src = self._emit_full(b, {node.refs()[0]}, names, "cols", "mask")
                names.update({k: v for k, v in src.items()})
                x = names[node.refs()[0]]
                b.append(f"r{i} = " + _reduce_block(node.op, x, "mask"))
                names[i] = f"r{i}"
            elif self.level[i] == "row" and i not in self.leaves:
                b.append(f"r{i} = " + pointwise(node, [operand(a, names)
                                                       for a in node.operands]))
                names[i] = f"r{i}"
        self._store(b, names, "cols", "mask")

    def _looped(self, b):
        names: dict[int, str] = {}
        for i in self.ids:
            node = self.nodes[i]
            if node.op in REDUCTIONS:
                self._reduction_loop(b, node, names)
                names[i] = f"r{i}"
            elif self.level[i] == "row" and i not in self.leaves:
                b.append(f"r{i} = " + pointwise(node, [operand(a, names)
                                                       for a in node.operands]))
                names[i] = f"r{i}"
        if self.level[self.out_id] == "full":
            b.append("for start in range(0, R, BLOCK_R):")
            inner = ["cols = start + tl.arange(0, BLOCK_R)[None, :]",
                     "mask = row_mask & (cols < R)"]
            self._store(inner, names, "cols", "mask")
            b.extend("    " + line for line in inner)
        else:
            self._store(b, names, "cols", "mask")

    def _reduction_loop(self, b, node: IRNode, names: dict):
        i, op = node.id, node.op
        init = {"sum": "tl.zeros([ROWS, BLOCK_R], dtype=tl.float32)",
                "max": f"tl.full([ROWS, BLOCK_R], {NEG_INF}, tl.float32)",
                "min": f"tl.full([ROWS, BLOCK_R], {POS_INF}, tl.float32)"}
        if op in init:
            b.append(f"acc{i} = {init[op]}")
        else:
            fill = NEG_INF if op == "argmax" else POS_INF
            b.append(f"best{i} = tl.full([ROWS, 1], {fill}, tl.float32)")
            b.append(f"idx{i} = tl.zeros([ROWS, 1], dtype=tl.int32)")
        b.append("for start in range(0, R, BLOCK_R):")
        loop = ["cols = start + tl.arange(0, BLOCK_R)[None, :]", "mask = row_mask & (cols < R)"]
        local = self._emit_full(loop, {node.refs()[0]}, names, "cols", "mask")
        x = local[node.refs()[0]]
        if op == "sum":
            loop.append(f"acc{i} += tl.where(mask, {x}, 0.0)")
        elif op in ("max", "min"):
            fn, fill = ("tl.maximum", NEG_INF) if op == "max" else ("tl.minimum", POS_INF)
            loop.append(f"acc{i} = {fn}(acc{i}, tl.where(mask, {x}, {fill}))")
        else:
            fill, red, cmp = (NEG_INF, "tl.max", ">") if op == "argmax" else (POS_INF, "tl.min",
                                                                              "<")
            loop.append(f"m{i} = tl.where(mask, {x}, {fill})")
            loop.append(f"cm{i} = {red}(m{i}, axis=1)[:, None]")
            loop.append(f"ci{i} = tl.{op}(m{i}, axis=1)[:, None] + start")
            loop.append(f"take{i} = cm{i} {cmp} best{i}")
            loop.append(f"best{i} = tl.where(take{i}, cm{i}, best{i})")
            loop.append(f"idx{i} = tl.where(take{i}, ci{i}, idx{i})")
        b.extend("    " + line for line in loop)
        if op == "sum":
            b.append(f"r{i} = tl.sum(acc{i}, axis=1)[:, None]")
        elif op == "max":
            b.append(f"r{i} = tl.max(acc{i}, axis=1)[:, None]")
        elif op == "min":
            b.append(f"r{i} = tl.min(acc{i}, axis=1)[:, None]")
        else:
            b.append(f"r{i} = idx{i}")

    def _store(self, b, names: dict, cols: str, mask: str):
        out = self.out_id
        if self.level[out] == "full":
            local = self._emit_full(b, {out}, names, cols, mask)
            b.append(f"tl.store(out_ptr + base + {cols} * INNER, "
                     f"{local[out]}.to(out_ptr.dtype.element_ty), mask={mask})")
        else:
            b.append(f"tl.store(out_ptr + rows, {names[out]}.to(out_ptr.dtype.element_ty), "
                     f"mask=row_mask)")

    def launch(self, out_var: str, launch_prefix: list[str]) -> list[str]:
        shape = self.shape
        outer = math.prod(shape[: self.d0])
        red = math.prod(shape[self.d0: self.d1 + 1])
        inner = math.prod(shape[self.d1 + 1:])
        lines = list(launch_prefix)
        call = [out_var] + [f"kh_t{i}" for i in self.leaves]
        lines.append(f"kh_shape = {tuple(shape)!r}")
        call += [f"{outer * inner}", f"{red}", f"{inner}"]
        for i in self.leaves:
            if leaf_kind(self.nodes[i].shape, shape) == "bcast":
                lines.append(f"kh_st{i} = kh_t{i}.expand(kh_shape).stride()")
                call += [f"kh_st{i}[{d}]" for d in varying_dims(self.nodes[i].shape, shape)]
        call += [f"{s}" for s in shape]
        rows = self.p.get("ROWS", 1)
        lines.append(f"kh_grid = (triton.cdiv({outer * inner}, {rows}),)")
        lines.append(f"{self.name}[kh_grid](" + ", ".join(call) +
                     f", ROWS={rows}, BLOCK_R={self.p['BLOCK_R']}, "
                     f"num_warps={self.p['num_warps']})")
        return lines


def _reduce_block(op: str, x: str, mask: str) -> str:
    if op == "sum":
        return f"tl.sum(tl.where({mask}, {x}, 0.0), axis=1)[:, None]"
    if op in ("max", "argmax"):
        return f"tl.{op}(tl.where({mask}, {x}, {NEG_INF}), axis=1)[:, None]"
    return f"tl.{op}(tl.where({mask}, {x}, {POS_INF}), axis=1)[:, None]"


# -- matmul --------------------------------------------------------------------------------

MATMUL_PREAMBLE = """\
pid = tl.program_id(0)
pid_k = tl.program_id(1)
batch = tl.program_id(2)
num_pid_m = tl.cdiv(M, BLOCK_M)
num_pid_n = tl.cdiv(N, BLOCK_N)
num_pid_in_group = GROUP_M * num_pid_n
group_id = pid // num_pid_in_group
first_pid_m = group_id * GROUP_M
group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
pid_n = (pid % num_pid_in_group) // group_size_m
rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
tile_mask = (rm[:, None] < M) & (rn[None, :] < N)"""

MATMUL_LOOP = """\
rk = tl.arange(0, BLOCK_K)
a_base = a_ptr + batch * stride_ab + rm[:, None] * stride_am
b_base = b_ptr + batch * stride_bb + rn[None, :] * stride_bn
acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
for k0 in range(pid_k * BLOCK_K, K, BLOCK_K * SPLIT_K):
    k = k0 + rk
    a = tl.load(a_base + k[None, :] * stride_ak, mask=(rm[:, None] < M) & (k[None, :] < K),
                other=0.0)
    b = tl.load(b_base + k[:, None] * stride_bk, mask=(k[:, None] < K) & (rn[None, :] < N),
                other=0.0)
    acc = tl.dot(a, b, acc, input_precision=PRECISION)"""


def epilogue_lines(an: Analysis, ids: list[int], mm_id: int, out_id: int) -> list[str]:
    names = {mm_id: "acc"}
    lines = []
    for i in ids:
        node = an.nodes[i]
        if i == mm_id:
            continue
        if node.op in LEAVES:
            lines.append(f"e{i} = tl.load(in{i}_ptr + batch * s{i}_b + rm[:, None] * s{i}_m "
                         f"+ rn[None, :] * s{i}_n, mask=tile_mask, other=0.0).to(tl.float32)")
        else:
            lines.append(f"e{i} = " + pointwise(node, [operand(a, names) for a in node.operands]))
        names[i] = f"e{i}"
    lines.append("out_ptrs = out_ptr + batch * stride_ob + rm[:, None] * stride_om "
                 "+ rn[None, :] * stride_on")
    lines.append(f"tl.store(out_ptrs, {names[out_id]}.to(out_ptr.dtype.element_ty), "
                 "mask=tile_mask)")
    return lines


# -- the candidate file --------------------------------------------------------------------

def model_init_source(problem_source: str) -> tuple[str, list[str]]:
    """The reference Model's __init__ (so parameters match) and module-level names it uses."""
    tree = ast.parse(problem_source)
    lines = problem_source.splitlines()
    model = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"),
                 None)
    init = None
    if model is not None:
        init = next((n for n in model.body if isinstance(n, ast.FunctionDef)
                     and n.name == "__init__"), None)
    if init is None:
        return "def __init__(self, *args, **kwargs):\n    super().__init__()\n", []
    start = (init.decorator_list[0].lineno if init.decorator_list else init.lineno) - 1
    text = textwrap.dedent("\n".join(lines[start: init.end_lineno]))
    text = text.replace("super(Model, self)", "super()")
    used = {n.id for n in ast.walk(init) if isinstance(n, ast.Name)}
    extras = []
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id in used for t in targets):
                extras.append(ast.get_source_segment(problem_source, node))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = {(a.asname or a.name).split(".")[0] for a in node.names}
            if names & used and names & {"math", "numpy", "np"}:
                extras.append(ast.get_source_segment(problem_source, node))
    return text + "\n", extras


def assemble(problem_source: str, an: Analysis, kernels: list[Kernel], forward: list[str],
             header: str) -> str:
    init, extras = model_init_source(problem_source)
    parts = [f'"""{header}"""', "import torch", "import torch.nn as nn", "import triton",
             "import triton.language as tl", ""]
    parts += [e for e in extras if e] + ([""] if extras else [])
    for kernel in kernels:
        parts += ["", kernel.source()]
    args = an.input_names or [f"x{i}" for i in range(an.input_count)]
    parts += ["", "class ModelNew(nn.Module):", textwrap.indent(init, "    ").rstrip("\n"), "",
              f"    def forward(self, {', '.join(args)}):"]
    parts += ["        " + line for line in shape_guard(an, args) + forward]
    return "\n".join(parts) + "\n"


def shape_guard(an: Analysis, args: list[str]) -> list[str]:
    """The kernels are specialised for the problem's shapes: refuse others loudly."""
    lines = []
    for node in an.topo():
        if node.op == "input" and 0 <= node.attrs.get("index", -1) < len(args):
            name, shape = args[node.attrs["index"]], tuple(node.shape)
            lines += [f"if tuple({name}.shape) != {shape!r}:",
                      f"    raise ValueError(f'generated for {name} of shape {shape!r}, got "
                      f"{{tuple({name}.shape)}}')"]
    return lines
