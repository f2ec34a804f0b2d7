"""Writing one stage's kernel (`staged.py` and the family modules: conv.py, pooling.py,
scans.py, matmul_variants.py, attention.py): `Context` holds what a candidate's stages share
(the plan, which nodes are stored, kernel parameters and launch arguments), and the helpers
unravel a flat index, store a stage's epilogue, and write a kernel's source and launch."""

from __future__ import annotations

import copy
from typing import Any

from search_engine.synthesis.offline.frontend.ir import LEAVES, Analysis
from search_engine.synthesis.offline.plan.stages import Stage, plan
from search_engine.synthesis.offline.writers import codegen, layout_copy
from search_engine.synthesis.offline.writers.staged_expr import Expr, contiguous_strides


class Context:
    """What the stages of one candidate share: the nodes, which are stored, argument names."""

    def __init__(self, an: Analysis, params: dict[str, Any]):
        self.an, self.nodes, self.params = an, an.nodes, params
        self.stages = plan(an)
        self.stored = {s.sink for s in self.stages}
        self.args = an.input_names or [f"x{i}" for i in range(an.input_count)]
        self._pointers: dict[int, str] = {}
        self._scalars: dict[int, str] = {}
        self.kernel_params: list[str] = []
        self.call_args: list[str] = []
        self.prelude: list[str] = []  # forward lines a kernel's launch needs (operand views)
        self.renamed: dict[int, str] = {}  # leaves a kernel reads through a prelude's copy
        # set by a writer: the kernel reads its leaves contiguous, at strides known when it
        # is written (`dense`: the leaves it read so), not passed at launch
        self.dense_leaves = False
        self.dense: set[int] = set()

    # per kernel: start() resets the argument lists
    def start(self) -> None:
        self._pointers, self._scalars = {}, {}
        self.kernel_params, self.call_args, self.prelude = [], [], []
        self.renamed, self.dense_leaves, self.dense = {}, False, set()

    _KERNEL_STATE = ("_pointers", "_scalars", "kernel_params", "call_args", "prelude",
                     "renamed", "dense_leaves", "dense")

    def save(self) -> dict[str, Any]:
        """The kernel's arguments so far, to put back after writing code that is thrown away."""
        return {k: copy.copy(getattr(self, k)) for k in self._KERNEL_STATE}

    def restore(self, saved: dict[str, Any]) -> None:
        for key, value in saved.items():
            setattr(self, key, value)

    def tensor(self, ref: int) -> str:
        """How forward() names a leaf or stored node."""
        node = self.nodes[ref]
        if ref in self.stored:
            return f"kh_b{ref}"
        return self.renamed.get(ref) or codegen.leaf_expr(node, self.args)

    def dim_innermost(self, ref: int, dim: int) -> None:
        """Read the leaf `ref` through a copy whose `dim` is innermost in memory (same shape,
        same indexing: channels-last for dim 1); nothing when `ref` is not a leaf."""
        node = self.nodes[ref]
        if ref in self.stored or node.op not in LEAVES or len(node.shape) < 2:
            return
        rank = len(node.shape)
        order = [d for d in range(rank) if d != dim] + [dim]
        back = [order.index(d) for d in range(rank)]
        name = f"kh_inner{ref}"
        view = f"{codegen.leaf_expr(node, self.args)}.permute{tuple(order)}"
        self.prelude.append(f"{name} = {layout_copy.contiguous(view)}.permute{tuple(back)}")
        self.renamed[ref] = name

    def pointer(self, ref: int) -> str:
        if ref not in self._pointers:
            self._pointers[ref] = f"p{ref}"
            if self.dense_leaves and ref not in self.stored and ref not in self.renamed:
                # `.contiguous()` returns an input already contiguous as it is (no copy)
                self.prelude.append(f"kh_d{ref} = {self.tensor(ref)}.contiguous()")
                self.renamed[ref] = f"kh_d{ref}"
                self.dense.add(ref)
            self.kernel_params.append(f"p{ref}")
            self.call_args.append(self.tensor(ref))
            if ref not in self.stored and ref not in self.dense:
                for d, size in enumerate(self.nodes[ref].shape):
                    if size != 1:
                        self.kernel_params.append(f"p{ref}_s{d}")
                        self.call_args.append(f"{self.tensor(ref)}.stride({d})")
        return self._pointers[ref]

    def strides(self, ref: int) -> list[str]:
        shape = self.nodes[ref].shape
        if ref in self.stored or ref in self.dense:
            return [str(s) for s in contiguous_strides(shape)]
        return [f"p{ref}_s{d}" for d in range(len(shape))]

    def scalar(self, ref: int) -> str:
        if ref not in self._scalars:
            self._scalars[ref] = f"sc{ref}"
            self.kernel_params.append(f"sc{ref}")
            self.call_args.append(self.tensor(ref))
        return self._scalars[ref]

    def buffer_line(self, ref: int) -> str:
        node = self.nodes[ref]
        dtype = self.an.output_dtype if ref == self.an.output else \
            ("torch.int64" if node.op in ("argmax", "argmin") else "torch.float32")
        return f"kh_b{ref} = torch.empty({tuple(node.shape)!r}, device={self.device()}, " \
               f"dtype={dtype})"

    def device(self) -> str:
        for node in self.an.topo():
            if node.op == "input" and not node.attrs.get("scalar"):
                return f"{self.args[node.attrs['index']]}.device"
        for node in self.an.topo():
            if node.op == "param":
                return f"{codegen.attribute_expr(node.attrs['path'])}.device"
        return "'cuda'"


def unravel(body: list[str], flat: str, shape, prefix: str) -> list[str]:
    """Index variables (one per dim; "0" for size-1 dims) of a row-major flat index."""
    names, strides = [], contiguous_strides(shape)
    for d, (size, stride) in enumerate(zip(shape, strides)):
        if size == 1:
            names.append("0")
            continue
        name = f"{prefix}{d}"
        body.append(f"{name} = (({flat}) // {stride}) % {size}" if stride != 1
                    else f"{name} = ({flat}) % {size}")
        names.append(name)
    return names


def store_epilogue(ctx: Context, expr: Expr, stage: Stage, idx, mask, zero: str) -> None:
    """Compute the stage's sink from the anchor's value (in `expr.subst`) and store it."""
    expr.local |= {stage.sink, *stage.epilogue}
    value = expr.value(stage.sink, idx, mask)
    out = ctx.pointer(stage.sink)
    offset = expr.offset(stage.sink, idx)
    # size-1 dims drop out of the offset (a matrix-vector product's one column): broadcast
    # the pointers back to the value's tile; a one-element output is all block
    unit_dims = any(size == 1 and i != "0" for i, size in zip(idx, ctx.nodes[stage.sink].shape))
    if offset == "0":
        offset = f"({zero}).to(tl.int64)"
    elif unit_dims:
        offset = f"{offset} + ({zero}).to(tl.int64)"
    expr.body.append(f"tl.store({out} + {offset}, ({value} + {zero}).to({out}.dtype."
                     f"element_ty), mask={mask})")


def finish_dot_stage(ctx: Context, stage: Stage, name: str, expr: Expr, idx, mask: str,
                     tile: str, grid: str, consts: dict[str, Any]) -> tuple[str, list[str]]:
    """The end of a tiled stage (conv, matmul, attention): the epilogue on `acc`, the store,
    the kernel's source and its launch."""
    expr.subst[stage.anchor] = "acc"
    store_epilogue(ctx, expr, stage, idx, mask, f"tl.zeros([{tile}], tl.float32)")
    source = kernel_source(name, ctx, list(consts), expr.body)
    return source, [launch(name, ctx, grid, consts, ctx.params["num_warps"],
                           ctx.params["num_stages"])]


DOT_PRECISIONS = ("ieee", "tf32x3", "tf32")  # tl.dot's input precisions a stage may use


def dot_precision(params: dict[str, Any]) -> str:
    """The stage's tl.dot input precision: `tf32x3` is strict fp32 on tensor cores (three tf32
    products), `ieee` the fp32 FMA fallback, `tf32` only under the tf32/bf16 policies (the
    space never proposes it under strict, and the static checks refuse it there)."""
    precision = params.get("PRECISION")
    return precision if precision in DOT_PRECISIONS else "ieee"


def p2(n: int) -> int:
    return codegen.next_pow2(max(1, int(n)))


def kernel_source(name: str, ctx: Context, constexprs: list[str], body: list[str]) -> str:
    params = ctx.kernel_params + [f"{c}: tl.constexpr" for c in constexprs]
    head = f"@triton.jit\ndef {name}(" + ", ".join(params) + "):\n"
    return head + "".join(f"    {line}\n" for line in body)


def launch(name: str, ctx: Context, grid: str, constexprs: dict[str, Any],
           num_warps: int, num_stages: int | None = None) -> str:
    kw = "".join(f", {k}={v}" for k, v in constexprs.items())
    if num_stages is not None:
        kw += f", num_stages={num_stages}"
    return f"{name}[{grid}](" + ", ".join(ctx.call_args) + f"{kw}, num_warps={num_warps})"
