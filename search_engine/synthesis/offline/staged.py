"""The staged family: a problem as a short pipeline of generated Triton kernels.

What one fused kernel cannot do (a convolution followed by a norm and a pool, BatchNorm's
statistics over non-adjacent dims, scans, losses, attention, several matmuls) is cut into
stages at its *anchors*: ``conv`` (conv.py), ``pool`` (pooling.py), ``scan`` (scans.py),
``matmul`` (matmul_variants.py), ``attention`` (attention.py) and reductions (this file).
Every other op is pointwise or an index op (reshape, permute, expand, flip, slice, cat, iota)
and is never stored: a kernel computes it where it reads it, through `Expr`, which turns a
node at a multi-index into Triton code (loads with the operands' own strides, so
non-contiguous inputs need no copy). A chain of pointwise ops right after an anchor is its
fused epilogue (bias, activation, scale); the op graph's output and any value a later stage
reads is stored in an fp32 buffer (the output in its own dtype).

The family's name is its main anchor (``conv``, ``attention``, ``batched_matmul``,
``pooling``, ``scan``, ``reduction``, ``pointwise``); one parameter set (tile sizes and warps)
serves every stage, each clamped to the stage's sizes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from search_engine.synthesis.base import NotCoveredError
from search_engine.synthesis.offline import codegen
from search_engine.synthesis.offline.analysis import (
    BINARY, LEAVES, STAGED_OPS, UNARY, Analysis, Const, IRNode,
)

REDUCE_OPS = {"sum", "max", "min", "argmax", "argmin", "prod"}
ANCHOR_OPS = {"conv", "pool", "scan", "matmul", "attention"} | REDUCE_OPS
INDEX_OPS = {"reshape", "permute", "transpose", "expand", "flip", "slice", "cat"}
VIEW_OPS = ("permute", "transpose", "reshape")  # a dot operand reads these as torch views
COMPARE = {"gt": ">", "lt": "<", "ge": ">=", "le": "<=", "eq": "==", "ne": "!="}
EXTRA_UNARY = {"sign", "floor", "ceil", "round", "trunc", "erf"}
POINTWISE_OPS = UNARY | BINARY | set(COMPARE) | EXTRA_UNARY | {"where", "iota"}
FAMILY_ORDER = (("conv", "conv"), ("attention", "attention"), ("matmul", "batched_matmul"),
                ("pool", "pooling"), ("scan", "scan"))
FAMILIES = ("conv", "attention", "batched_matmul", "pooling", "scan", "reduction", "pointwise")
MAX_CONV_RANK = 3


def needs_staging(nodes: dict[int, IRNode]) -> bool:
    return any(n.op in STAGED_OPS or n.attrs.get("scalar") for n in nodes.values())


def family_of(nodes: dict[int, IRNode]) -> str:
    ops = {n.op for n in nodes.values()}
    for op, family in FAMILY_ORDER:
        if op in ops:
            return family
    return "reduction" if ops & REDUCE_OPS else "pointwise"


def classify(nodes, output, input_count, op_names, input_names, output_dtype,
             refused: NotCoveredError | None = None) -> Analysis:
    """The staged analysis, or NotCoveredError naming what no stage can do."""
    problems = []
    for node in nodes.values():
        if node.op not in POINTWISE_OPS | INDEX_OPS | ANCHOR_OPS | LEAVES:
            problems.append(node.op)
        elif node.op in ANCHOR_OPS:
            reason = _anchor_problem(nodes, node)
            if reason:
                problems.append(reason)
    if nodes[output].op in LEAVES:
        problems.append("identity")
    if problems:
        ops = sorted(set(problems) | set(refused.ops if refused else []))
        raise NotCoveredError("no staged template covers this problem", ops)
    return Analysis(family_of(nodes), nodes, output, input_count, op_names=op_names,
                    input_names=input_names, output_dtype=output_dtype)


def _anchor_problem(nodes, node) -> str | None:
    shapes = [nodes[r].shape for r in node.refs()]
    if node.op == "conv":
        nd = len(node.attrs["stride"])
        if not 1 <= nd <= MAX_CONV_RANK or len(shapes[0]) != nd + 2 \
                or len(shapes[1]) != nd + 2:
            return "conv (input without a batch dim)"
    elif node.op == "pool":
        if len(shapes[0]) < len(node.attrs["kernel"]) + 1:
            return "pool (rank)"
    elif node.op in ("matmul", "attention"):
        if any(len(s) < 2 for s in shapes):
            return f"{node.op} (1-D operand)"
    return None


# -- the plan ----------------------------------------------------------------------------------

@dataclass
class Stage:
    anchor: int  # the anchor (or the pointwise node) this stage computes
    sink: int  # the node it stores (the anchor, or the end of its fused epilogue)
    epilogue: list[int] = field(default_factory=list)


def users(nodes: dict[int, IRNode]) -> dict[int, list[int]]:
    found: dict[int, list[int]] = {i: [] for i in nodes}
    for node in nodes.values():
        for ref in set(node.refs()):
            found[ref].append(node.id)
    return found


def plan(an: Analysis) -> list[Stage]:
    """The stages in topological order; which nodes are stored."""
    nodes, used_by = an.nodes, users(an.nodes)
    stages, stored = [], set()
    for node in an.topo():
        if node.op not in ANCHOR_OPS:
            continue
        sink, epilogue = node.id, []
        while sink != an.output and len(used_by[sink]) == 1:
            nxt = nodes[used_by[sink][0]]
            if nxt.op not in POINTWISE_OPS or nxt.op == "iota" or \
                    tuple(nxt.shape) != tuple(nodes[sink].shape) or any(
                        _reaches_anchor(nodes, r, stored) for r in nxt.refs() if r != sink):
                break
            sink = nxt.id
            epilogue.append(sink)
        stages.append(Stage(node.id, sink, epilogue))
        stored.add(sink)
    for node in an.topo():  # dot operands computed by pointwise ops are stored first
        if node.op in ("conv", "matmul", "attention"):
            for ref in node.refs():
                if not _plain_operand(nodes, ref, stored):
                    stages.append(Stage(ref, ref))
                    stored.add(ref)
    if an.output not in stored:
        stages.append(Stage(an.output, an.output))
    order = {i: k for k, i in enumerate(sorted(nodes))}
    return sorted(stages, key=lambda s: order[s.anchor])


def _reaches_anchor(nodes, ref, stored) -> bool:
    """Whether computing `ref` inline would need an anchor that is not stored yet (an
    epilogue may read only leaves, stored nodes and ops over them)."""
    stack, seen = [ref], set()
    while stack:
        i = stack.pop()
        if i in seen or i in stored:
            continue
        seen.add(i)
        if nodes[i].op in ANCHOR_OPS:
            return True
        stack.extend(nodes[i].refs())
    return False


def _plain_operand(nodes, ref, stored) -> bool:
    """A tensor a dot kernel can read with strides: a leaf, a stored node, or a permute /
    transpose / reshape of one (passed as a torch view; broadcast batch dims get stride 0)."""
    node = nodes[ref]
    while node.op in VIEW_OPS and node.id not in stored:
        node = nodes[node.refs()[0]]
    return (node.op in LEAVES and not node.attrs.get("scalar")) or node.id in stored


# -- expressions -------------------------------------------------------------------------------

class Expr:
    """Triton code for IR nodes at a multi-index, written into one kernel's body.

    `idx` is one code string per dim of the node's shape ("0" where the size is 1), each an
    int64 tensor expression of the kernel's tile; `mask` guards the loads. Values are fp32.
    Stored nodes and leaves are loaded; `subst` maps a node to a variable already computed
    (an anchor's accumulator inside its own stage)."""

    def __init__(self, ctx: "Context", body: list[str]):
        self.ctx, self.body = ctx, body
        self.cache: dict[tuple, str] = {}
        self.subst: dict[int, str] = {}
        self.local: set[int] = set()  # stored nodes this kernel computes (not loads)
        self.counter = 0

    def var(self, code: str) -> str:
        self.counter += 1
        name = f"e{self.counter}"
        self.body.append(f"{name} = {code}")
        return name

    def value(self, ref, idx: tuple[str, ...], mask: str) -> str:
        if isinstance(ref, Const):
            return codegen.lit(ref.value)
        if ref in self.subst:
            return self.subst[ref]
        key = (ref, tuple(idx), mask)
        if key not in self.cache:
            self.cache[key] = self._compute(self.ctx.nodes[ref], tuple(idx), mask)
        return self.cache[key]

    def offset(self, ref: int, idx: tuple[str, ...]) -> str:
        """The element offset of a stored node or tensor leaf at `idx`."""
        strides = self.ctx.strides(ref)
        terms = [f"({i}) * {s}" for i, s, size in zip(idx, strides, self.ctx.nodes[ref].shape)
                 if size != 1 and i != "0"]
        return " + ".join(terms) or "0"

    def load(self, ref: int, idx, mask) -> str:
        ptr = self.ctx.pointer(ref)
        if self.offset(ref, idx) == "0":  # one element, the same for the whole tile
            return self.var(f"tl.load({ptr}).to(tl.float32)")
        return self.var(f"tl.load({ptr} + {self.offset(ref, idx)}, mask={mask}, other=0.0)"
                        ".to(tl.float32)")

    def _compute(self, node: IRNode, idx, mask) -> str:
        ctx = self.ctx
        if node.op == "input" and node.attrs.get("scalar"):
            return ctx.scalar(node.id)
        if node.op in LEAVES or (node.id in ctx.stored and node.id not in self.local):
            return self.load(node.id, idx, mask)
        if node.op in INDEX_OPS:
            return self._index_op(node, idx, mask)
        if node.op == "iota":
            return f"({idx[node.attrs['dim']]}).to(tl.float32)"
        operands = [self.value(r, self._bcast(r, node, idx), mask) if isinstance(r, int)
                    else codegen.lit(r.value) for r in node.operands]
        return self.var(pointwise(node, operands))

    def _materialized(self, ref: int) -> bool:
        return ref in self.subst or (ref in self.ctx.stored and ref not in self.local)

    def _bcast(self, ref: int, node: IRNode, idx) -> tuple[str, ...]:
        shape = self.ctx.nodes[ref].shape
        lead = len(node.shape) - len(shape)
        return tuple("0" if s == 1 else idx[lead + j] for j, s in enumerate(shape))

    def _index_op(self, node: IRNode, idx, mask) -> str:
        nodes = self.ctx.nodes
        src = node.operands[0]
        if node.op == "reshape":  # a reshape of a reshape reads the first one's source
            while nodes[src].op == "reshape" and not self._materialized(src):
                src = nodes[src].operands[0]
        src_shape = nodes[src].shape if isinstance(src, int) else ()
        if node.op == "reshape":
            return self.value(src, reshape_index(idx, node.shape, src_shape), mask)
        if node.op in ("permute", "transpose"):
            rank = len(node.shape)
            perm = node.attrs.get("perm") or tuple(range(rank - 2)) + (rank - 1, rank - 2)
            inner = [""] * rank
            for d, p in enumerate(perm):
                inner[p] = idx[d]
            return self.value(src, tuple(inner), mask)
        if node.op == "expand":
            return self.value(src, self._bcast(src, node, idx), mask)
        if node.op == "flip":
            inner = tuple(f"({s - 1} - ({i}))" if d in node.attrs["dims"] and s != 1 else i
                          for d, (i, s) in enumerate(zip(idx, node.shape)))
            return self.value(src, inner, mask)
        if node.op == "slice":
            d, start, step = node.attrs["dim"], node.attrs["start"], node.attrs["step"]
            inner = list(idx)
            inner[d] = f"({start} + ({idx[d]}) * {step})" if idx[d] != "0" else str(start)
            return self.value(src, tuple(inner), mask)
        return self._cat(node, idx, mask)

    def _cat(self, node, idx, mask) -> str:
        d = node.attrs["dim"]
        out, start = None, 0
        parts = []
        for ref in node.refs():
            size = self.ctx.nodes[ref].shape[d]
            inner = list(idx)
            inner[d] = f"({idx[d]} - {start})"
            inside = f"(({idx[d]}) >= {start}) & (({idx[d]}) < {start + size})"
            parts.append((inside, self.value(ref, tuple(inner), f"({mask}) & {inside}")))
            start += size
        for inside, value in reversed(parts):
            out = value if out is None else f"tl.where({inside}, {value}, {out})"
        return self.var(out)


def reshape_index(idx, shape, src_shape) -> tuple[str, ...]:
    """The source index of a reshape: direct when only size-1 dims differ, else through the
    row-major flat index."""
    kept = [i for i, s in zip(idx, shape) if s != 1]
    if [s for s in shape if s != 1] == [s for s in src_shape if s != 1]:
        it = iter(kept)
        return tuple("0" if s == 1 else next(it) for s in src_shape)
    strides = contiguous_strides(shape)
    flat = " + ".join(f"({i}) * {st}" for i, st, s in zip(idx, strides, shape)
                      if s != 1 and i != "0") or "0"
    src_strides = contiguous_strides(src_shape)
    return tuple("0" if s == 1 else f"((({flat}) // {st}) % {s})"
                 for s, st in zip(src_shape, src_strides))


def contiguous_strides(shape) -> list[int]:
    strides, acc = [], 1
    for s in reversed(tuple(shape)):
        strides.append(acc)
        acc *= s
    return list(reversed(strides))


def pointwise(node: IRNode, a: list[str]) -> str:
    if node.op in COMPARE:
        return f"tl.where(({a[0]}) {COMPARE[node.op]} ({a[1]}), 1.0, 0.0)"
    if node.op == "where":
        return f"tl.where(({a[0]}) != 0.0, {a[1]}, {a[2]})"
    if node.op == "sign":
        return f"tl.where(({a[0]}) > 0.0, 1.0, tl.where(({a[0]}) < 0.0, -1.0, 0.0))"
    if node.op in ("floor", "ceil", "erf"):
        return f"tl.math.{node.op}({a[0]})" if node.op != "erf" else f"tl.erf({a[0]})"
    if node.op == "trunc":
        return f"tl.where(({a[0]}) >= 0.0, tl.math.floor({a[0]}), tl.math.ceil({a[0]}))"
    if node.op == "round":  # half to even, as torch.round
        up = f"tl.math.floor(({a[0]}) + 0.5)"
        tie = f"((({a[0]}) + 0.5) == {up}) & (({up} % 2.0) != 0.0)"
        return f"({up} - tl.where({tie}, 1.0, 0.0))"
    return codegen.pointwise(node, a)


# -- rendering ---------------------------------------------------------------------------------

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

    # per kernel: start() resets the argument lists
    def start(self) -> None:
        self._pointers, self._scalars = {}, {}
        self.kernel_params, self.call_args, self.prelude = [], [], []

    def tensor(self, ref: int) -> str:
        """How forward() names a leaf or stored node."""
        node = self.nodes[ref]
        if ref in self.stored:
            return f"kh_b{ref}"
        return codegen.leaf_expr(node, self.args)

    def pointer(self, ref: int) -> str:
        if ref not in self._pointers:
            self._pointers[ref] = f"p{ref}"
            self.kernel_params.append(f"p{ref}")
            self.call_args.append(self.tensor(ref))
            if ref not in self.stored:
                for d, size in enumerate(self.nodes[ref].shape):
                    if size != 1:
                        self.kernel_params.append(f"p{ref}_s{d}")
                        self.call_args.append(f"{self.tensor(ref)}.stride({d})")
        return self._pointers[ref]

    def strides(self, ref: int) -> list[str]:
        shape = self.nodes[ref].shape
        if ref in self.stored:
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
                return f"self.{node.attrs['path']}.device"
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
    if offset == "0":  # a one-element output: store through a block of pointers
        offset = f"({zero}).to(tl.int64)"
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


def write_pointwise(ctx: Context, stage: Stage, name: str) -> tuple[str, list[str]]:
    node = ctx.nodes[stage.sink]
    block = min(ctx.params["BLOCK"], p2(math.prod(node.shape)))
    body = ["pid = tl.program_id(0).to(tl.int64)",
            "offs = pid * BLOCK + tl.arange(0, BLOCK)",
            f"mask = offs < {math.prod(node.shape)}"]
    expr = Expr(ctx, body)
    expr.local.add(stage.sink)
    idx = unravel(body, "offs", node.shape, "i")
    value = expr.value(stage.sink, tuple(idx), "mask")
    out = ctx.pointer(stage.sink)
    body.append(f"tl.store({out} + offs, ({value} + tl.zeros([BLOCK], tl.float32))"
                f".to({out}.dtype.element_ty), mask=mask)")
    grid = f"(triton.cdiv({math.prod(node.shape)}, {block}),)"
    return (kernel_source(name, ctx, ["BLOCK"], body),
            [launch(name, ctx, grid, {"BLOCK": block}, ctx.params["num_warps"])])


def write_reduction(ctx: Context, stage: Stage, name: str) -> tuple[str, list[str]]:
    """One program per BLOCK_O outputs; the reduced elements streamed BLOCK_R at a time.

    Few outputs over many elements (a GroupNorm's statistics, a loss) split the reduced
    range over SPLIT programs per output: partial results go to a small fp32 buffer that a
    second kernel combines before the epilogue."""
    node = ctx.nodes[stage.anchor]
    src = node.refs()[0]
    in_shape = ctx.nodes[src].shape
    dims = tuple(node.attrs["dims"])
    kept = [d for d in range(len(in_shape)) if d not in dims]
    n_out, n_red = math.prod(node.shape), math.prod(in_shape[d] for d in dims)
    block_o = min(ctx.params["BLOCK_O"], p2(n_out))
    block_r = max(2, min(ctx.params["BLOCK_R"], p2(n_red), max(2, 8192 // block_o)))
    op = node.op
    split = reduction_split(ctx.params, op, n_out, n_red, block_o, block_r)
    chunk = -(-(-(-n_red // split)) // block_r) * block_r
    body = ["pid = tl.program_id(0).to(tl.int64)",
            "offs = pid * BLOCK_O + tl.arange(0, BLOCK_O)",
            f"omask = offs < {n_out}"]
    expr = Expr(ctx, body)
    out_idx = unravel(body, "offs", node.shape, "o")
    kept_idx = [out_idx[d] for d in kept] if node.attrs.get("keepdim") else list(out_idx)
    init = {"sum": "0.0", "prod": "1.0", "max": codegen.NEG_INF, "min": codegen.POS_INF,
            "argmax": codegen.NEG_INF, "argmin": codegen.POS_INF}[op]
    body.append(f"acc = tl.full([BLOCK_O], {init}, tl.float32)")
    if op in ("argmax", "argmin"):
        body.append("best = tl.zeros([BLOCK_O], tl.int64)")
    if split > 1:
        body.append(f"r_start = tl.program_id(1).to(tl.int64) * {chunk}")
        body.append(f"for r_start0 in range(0, {chunk}, BLOCK_R):")
    else:
        body.append(f"for r_start0 in range(0, {n_red}, BLOCK_R):")
    inner: list[str] = []
    expr.body = inner
    start = "r_start + r_start0" if split > 1 else "r_start0"  # loop names no index shadows
    inner.append(f"rr = {start} + tl.arange(0, BLOCK_R).to(tl.int64)")
    inner.append(f"rmask = rr < {n_red}")
    red_idx = unravel(inner, "rr", [in_shape[d] for d in dims], "r")
    full, ki, ri = [], iter(kept_idx), iter(red_idx)
    for d in range(len(in_shape)):
        i = next(ri) if d in dims else next(ki)
        full.append(i if i == "0" else (f"({i})[None, :]" if d in dims else f"({i})[:, None]"))
    inner.append("m2 = omask[:, None] & rmask[None, :]")
    v = expr.value(src, tuple(full), "m2")
    inner.extend(_accumulate(op, v))
    body.extend("    " + line for line in inner)
    consts = {"BLOCK_O": block_o, "BLOCK_R": block_r}
    warps = ctx.params["num_warps"]
    if split > 1:
        return _split_reduction(ctx, stage, name, body, consts, split, n_out, out_idx)
    expr.body, expr.cache = body, {}
    expr.subst[stage.anchor] = "best" if op in ("argmax", "argmin") else "acc"
    store_epilogue(ctx, expr, stage, tuple(out_idx), "omask", "tl.zeros([BLOCK_O], tl.float32)"
                   if op not in ("argmax", "argmin") else "tl.zeros([BLOCK_O], tl.int64)")
    grid = f"(triton.cdiv({n_out}, {block_o}),)"
    return (_with_combine(op) + kernel_source(name, ctx, list(consts), body),
            [launch(name, ctx, grid, consts, warps)])


def reduction_split(params, op, n_out, n_red, block_o, block_r) -> int:
    """Programs per output: enough for ~`SPLIT_R` × the outputs' programs to fill the GPU,
    each still streaming at least 4 chunks; never for arg-reductions (their ties)."""
    if op in ("argmax", "argmin") or params.get("SPLIT_R", 1) <= 1:
        return 1
    programs = -(-n_out // block_o)
    split = max(1, min(params["SPLIT_R"] // programs, n_red // (4 * block_r)))
    return 1 << (split.bit_length() - 1)  # a power of two: the combine kernel's tile


def _split_reduction(ctx, stage, name, body, consts, split, n_out, out_idx):
    node = ctx.nodes[stage.anchor]
    op, part = node.op, f"kh_part{stage.anchor}"
    ctx.kernel_params.append("part_ptr")
    ctx.call_args.append(part)
    body.append("tl.store(part_ptr + offs * SPLIT + tl.program_id(1), acc, mask=omask)")
    first = kernel_source(name + "_partial", ctx, list(consts) + ["SPLIT"], body)
    block_o, warps = consts["BLOCK_O"], ctx.params["num_warps"]
    lines = [f"{part} = torch.empty(({n_out * split},), device={ctx.device()}, "
             "dtype=torch.float32)",
             launch(name + "_partial", ctx, f"(triton.cdiv({n_out}, {block_o}), {split})",
                    {**consts, "SPLIT": split}, warps)]
    prelude = list(ctx.prelude)
    ctx.start()
    ctx.prelude = prelude
    ctx.kernel_params.append("part_ptr")
    ctx.call_args.append(part)
    fill = {"sum": "0.0", "prod": "1.0", "max": codegen.NEG_INF, "min": codegen.POS_INF}[op]
    body = ["pid = tl.program_id(0).to(tl.int64)",
            "offs = pid * BLOCK_O + tl.arange(0, BLOCK_O)",
            f"omask = offs < {n_out}",
            "parts = tl.load(part_ptr + offs[:, None] * SPLIT + tl.arange(0, SPLIT)[None, :], "
            f"mask=omask[:, None], other={fill})"]
    body.append({"sum": "acc = tl.sum(parts, axis=1)", "max": "acc = tl.max(parts, axis=1)",
                 "min": "acc = tl.min(parts, axis=1)",
                 "prod": "acc = tl.reduce(parts, 1, _kh_mul)"}[op])
    expr = Expr(ctx, body)
    out_idx = unravel(body, "offs", node.shape, "o")
    expr.subst[stage.anchor] = "acc"
    store_epilogue(ctx, expr, stage, tuple(out_idx), "omask", "tl.zeros([BLOCK_O], tl.float32)")
    second = kernel_source(name, ctx, ["BLOCK_O", "SPLIT"], body)
    lines.append(launch(name, ctx, f"(triton.cdiv({n_out}, {block_o}),)",
                        {"BLOCK_O": block_o, "SPLIT": split}, warps))
    return _with_combine(op) + first + "\n\n" + second, lines


def _accumulate(op: str, v: str) -> list[str]:
    if op == "sum":
        return [f"acc += tl.sum(tl.where(m2, {v}, 0.0), axis=1)"]
    if op == "prod":
        return [f"acc *= tl.reduce(tl.where(m2, {v}, 1.0), 1, _kh_mul)"]
    if op in ("max", "min"):
        fill = codegen.NEG_INF if op == "max" else codegen.POS_INF
        return [f"acc = tl.{op}imum(acc, tl.{op}(tl.where(m2, {v}, {fill}), axis=1))"]
    better = ">" if op == "argmax" else "<"
    fill = codegen.NEG_INF if op == "argmax" else codegen.POS_INF
    kind = op[3:]
    return [f"vals = tl.where(m2, {v}, {fill})",
            f"top = tl.{kind}(vals, axis=1)",
            f"at = tl.min(tl.where((vals == top[:, None]) & m2, rr[None, :], "
            f"9223372036854775807), axis=1)",
            f"take = top {better} acc",
            "best = tl.where(take, at, best)",
            "acc = tl.where(take, top, acc)"]


def _with_combine(op: str) -> str:
    if op != "prod":
        return ""
    return "@triton.jit\ndef _kh_mul(a, b):\n    return a * b\n\n\n"


def writer_for(op: str):
    from search_engine.synthesis.offline import attention, conv, matmul_variants, pooling, scans

    return {"conv": conv.write, "pool": pooling.write, "scan": scans.write,
            "matmul": matmul_variants.write, "attention": attention.write}.get(
        op, write_reduction if op in REDUCE_OPS else write_pointwise)


def render(problem_source: str, an: Analysis, params: dict[str, Any]) -> str:
    ctx = Context(an, params)
    kernels, forward = [], []
    result = f"kh_b{an.output}"
    last, out = ctx.stages[-1], an.nodes[an.output]
    if last.anchor == an.output and out.op == "reshape" and out.refs()[0] in ctx.stored \
            and an.output_dtype == "torch.float32":  # the output is a view of a stored node
        ctx.stages.pop()
        result = f"kh_b{out.refs()[0]}.reshape({tuple(out.shape)!r})"
    for k, stage in enumerate(ctx.stages):
        ctx.start()
        op = ctx.nodes[stage.anchor].op
        name = f"kh_stage{k}_{op}"
        forward.append(ctx.buffer_line(stage.sink))
        source, lines = writer_for(op if stage.anchor != stage.sink or op in ANCHOR_OPS
                                   else "pointwise")(ctx, stage, name)
        kernels.append(_Source(source))
        forward.extend(ctx.prelude + lines)
    forward.append(f"return {result}")
    header = (f"Generated by KernelHub's offline synthesizer.\n\nFamily: {an.family} "
              f"(staged: {len(ctx.stages)} kernels); reference ops: "
              f"{', '.join(an.op_names)}.\nTemplate parameters: {sorted(params.items())}.\n")
    return codegen.assemble(problem_source, an, kernels, forward, header)


class _Source:
    def __init__(self, text: str):
        self.text = text

    def source(self) -> str:
        return self.text


# -- parameters and moves ------------------------------------------------------------------------

SPACE: dict[str, list] = {
    "BLOCK": [128, 256, 512, 1024, 2048], "BLOCK_O": [1, 2, 4, 8, 16, 32, 64],
    "BLOCK_R": [16, 32, 64, 128, 256, 512, 1024, 2048], "BLOCK_M": [16, 32, 64, 128],
    "BLOCK_N": [16, 32, 64, 128], "BLOCK_K": [16, 32, 64], "num_warps": [1, 2, 4, 8],
    "num_stages": [1, 2, 3, 4], "SPLIT_R": [1, 16, 64, 256, 1024],
}


def default_params(an: Analysis, target: str, policy: str) -> dict[str, Any]:
    gpu = target != "interpreter"
    return {"BLOCK": 1024 if gpu else 256, "BLOCK_O": 4, "BLOCK_R": 256 if gpu else 64,
            "BLOCK_M": 64 if gpu else 16, "BLOCK_N": 64 if gpu else 16,
            "BLOCK_K": 32 if gpu else 16, "num_warps": 4, "num_stages": 2 if gpu else 1,
            "SPLIT_R": 256 if gpu else 1,
            "PRECISION": "tf32" if policy in ("tf32", "bf16") else "ieee"}


def clamp(an: Analysis, params: dict[str, Any]) -> dict[str, Any]:
    out = dict(params)
    for key, choices in SPACE.items():
        if out.get(key) not in choices:
            out[key] = min(choices, key=lambda c: abs(c - int(out.get(key, choices[0]))))
    return out


def valid(an: Analysis, params: dict[str, Any]) -> bool:
    return all(params.get(k) in v for k, v in SPACE.items())


def random_params(an: Analysis, base: dict[str, Any], rng) -> dict[str, Any]:
    return {**base, **{k: rng.choice(v) for k, v in SPACE.items()}}


def ordered_moves(an: Analysis, diagnosis: str, policy: str, rng,
                  params: dict | None = None) -> list[str]:
    """Moves as `±` steps of one parameter; the diagnosis picks which come first."""
    order = {"failure": ["BLOCK_M-", "BLOCK_N-", "BLOCK_R-", "BLOCK-", "num_warps-"],
             "memory": ["BLOCK+", "BLOCK_O+", "BLOCK_R+", "num_warps+"],
             "compute": ["BLOCK_M+", "BLOCK_N+", "num_stages+", "BLOCK_K+"],
             "latency": ["num_warps-", "BLOCK_O-", "BLOCK_M-"]}.get(diagnosis, [])
    rest = [f"{k}{s}" for k in SPACE for s in "+-" if f"{k}{s}" not in order]
    if policy != "strict":
        rest.append("tf32")
    rng.shuffle(rest)
    return order + rest


def apply_move(an: Analysis, params: dict[str, Any], move: str) -> dict[str, Any] | None:
    if move == "tf32":
        return None if params.get("PRECISION") == "tf32" else {**params, "PRECISION": "tf32"}
    key, step = move[:-1], 1 if move.endswith("+") else -1
    choices = SPACE.get(key)
    if not choices or params.get(key) not in choices:
        return None
    at = choices.index(params[key]) + step
    if not 0 <= at < len(choices):
        return None
    return {**params, key: choices[at]}


def notes(an: Analysis, params: dict[str, Any]) -> str:
    return f"family {an.family} (staged); dot_precision {params.get('PRECISION', 'ieee')}"


def fits_shared_memory(an: Analysis, params: dict[str, Any], limit_bytes: int) -> bool:
    if limit_bytes <= 0:
        return True
    tile = params["BLOCK_M"] * params["BLOCK_K"] + params["BLOCK_K"] * params["BLOCK_N"]
    return max(1, params["num_stages"] - 1) * tile * 4 <= limit_bytes
