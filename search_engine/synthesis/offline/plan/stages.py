"""The staged family's op vocabulary and its plan (rendered by `writers/staged.py`): which
ops are anchors (each gets its own kernel), which are pointwise or index ops (computed where
they are read), and how a graph is cut into stages — an anchor with its fused pointwise
epilogue, dot operands a kernel cannot read with strides, and the output, in topological
order."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from search_engine.synthesis.offline.frontend.ir import BINARY, LEAVES, UNARY, Analysis, IRNode

REDUCE_OPS = {"sum", "max", "min", "argmax", "argmin", "prod"}
ANCHOR_OPS = {"conv", "pool", "scan", "matmul", "attention", "recurrence"} | REDUCE_OPS
INDEX_OPS = {"reshape", "permute", "transpose", "expand", "flip", "slice", "unfold", "cat",
             "pad"}
VIEW_OPS = ("permute", "transpose", "reshape")  # a dot operand reads these as torch views
# dots that take their operands as torch views with strides (`matmul_variants.pass_operand`)
# also read a slice that way (a gate's rows of an LSTM's weight, a head's part of a fused
# QKV projection), unless a reshape after it would make torch copy (`_views_without_copy`)
STRIDED_OPERAND_DOTS = ("matmul", "attention")
COMPARE = {"gt": ">", "lt": "<", "ge": ">=", "le": "<=", "eq": "==", "ne": "!="}
EXTRA_UNARY = {"sign", "floor", "ceil", "round", "trunc", "erf"}
POINTWISE_OPS = UNARY | BINARY | set(COMPARE) | EXTRA_UNARY | {"where", "iota"}


@dataclass
class Stage:
    anchor: int  # the anchor (or the pointwise node) this stage computes
    sink: int  # the node it stores (the anchor, or the end of its fused epilogue)
    epilogue: list[int] = field(default_factory=list)
    # a conv's pooling fused into its kernel (`fused_pool`): the pool node, and the value it
    # pools (the end of the conv's own epilogue), which is never stored
    pool: int | None = None
    pooled: int | None = None


def users(nodes: dict[int, IRNode]) -> dict[int, list[int]]:
    found: dict[int, list[int]] = {i: [] for i in nodes}
    for node in nodes.values():
        for ref in set(node.refs()):
            found[ref].append(node.id)
    return found


def plan(an: Analysis) -> list[Stage]:
    """The stages in topological order; which nodes are stored."""
    nodes, used_by = an.nodes, users(an.nodes)
    stages, stored, absorbed = [], set(), set()
    for node in an.topo():
        if node.op not in ANCHOR_OPS or node.id in absorbed:
            continue
        # a recurrence reads its stored states back as the next step's: nothing fused
        sink, epilogue = (node.id, []) if node.op == "recurrence" else fused_epilogue(
            nodes, used_by, node.id, an.output, stored)
        pool = fused_pool(nodes, used_by, node, sink, an.output)
        if pool is None:
            stages.append(Stage(node.id, sink, epilogue))
        else:  # the pool and its own epilogue follow in the conv's kernel
            pooled = sink
            sink, after = fused_epilogue(nodes, used_by, pool, an.output, stored)
            stages.append(Stage(node.id, sink, epilogue + [pool] + after, pool, pooled))
            absorbed.add(pool)
        stored.add(sink)
    for node in an.topo():  # dot operands computed by pointwise ops are stored first
        if node.op in ("conv", "matmul", "attention"):
            for ref in node.refs():
                if not _plain_operand(nodes, ref, stored,
                                      slices=node.op in STRIDED_OPERAND_DOTS):
                    stages.append(Stage(ref, ref))
                    stored.add(ref)
    if an.output not in stored:
        stages.append(Stage(an.output, an.output))
    order = {i: k for k, i in enumerate(sorted(nodes))}
    return sorted(stages, key=lambda s: order[s.anchor])


def fused_epilogue(nodes, used_by, anchor: int, output: int,
                   stored: set[int]) -> tuple[int, list[int]]:
    """(sink, epilogue): the pointwise ops over the anchor's elements its kernel computes
    before it stores one result. The epilogue is a region, not only a chain: `x * sigmoid(x)`
    or `x + r; x * r` read a value twice, and every value in the region but the sink is read
    only inside it (so none is stored). It grows one op at a time, each reading the region,
    leaves, stored nodes or ops over those; the largest region with one way out wins."""
    shape = tuple(nodes[anchor].shape)
    region, order, best = {anchor}, [], (anchor, [])
    while True:
        joinable = [u for u in sorted({u for r in region for u in used_by[r]} - region)
                    if _joins_epilogue(nodes, nodes[u], region, shape, stored)]
        if not joinable:
            return best
        region.add(joinable[0])
        order.append(joinable[0])
        exits = [r for r in region if r == output or any(u not in region for u in used_by[r])]
        if len(exits) == 1:
            best = (exits[0], list(order))


# a fused pool's window (taps): a power of two, so a program's rows are whole windows
FUSED_POOL_MAX_WINDOW = 64


def fused_pool(nodes, used_by, conv: IRNode, sink: int, output: int) -> int | None:
    """The pool a conv's kernel computes too, or None: a max or average pool over the conv's
    spatial dims whose windows tile its output (stride = kernel, no padding or dilation, a
    power-of-two window), reading the conv's epilogue result and nothing else reads that. The
    conv then stores the pooled tensor, a window's size times smaller, instead of writing its
    output for a pool kernel to read back."""
    if conv.op != "conv" or sink == output or len(used_by[sink]) != 1:
        return None
    pool = nodes[used_by[sink][0]]
    at = pool.attrs
    if pool.op != "pool" or at.get("mode") not in ("max", "avg") or at.get("adaptive") \
            or at.get("divisor") is not None or pool.refs() != [sink]:
        return None
    kernel = tuple(at.get("kernel", ()))
    window = math.prod(kernel)
    if len(conv.shape) != len(kernel) + 2 or tuple(at.get("stride", ())) != kernel \
            or any(at.get("padding", ())) or any(d != 1 for d in at.get("dilation", ())) \
            or window & (window - 1) or not 1 < window <= FUSED_POOL_MAX_WINDOW:
        return None
    tiled = tuple(conv.shape[:2]) + tuple(o // k for o, k in zip(conv.shape[2:], kernel))
    return pool.id if tuple(pool.shape) == tiled else None


def _joins_epilogue(nodes, node: IRNode, region: set[int], shape, stored: set[int]) -> bool:
    return node.op in POINTWISE_OPS and node.op != "iota" and tuple(node.shape) == shape and \
        not any(_reaches_anchor(nodes, r, stored) for r in node.refs() if r not in region)


def output_view_of(an: Analysis, stages: list[Stage]) -> int | None:
    """The stored node whose reshape is the output, when the last stage would only copy it:
    the candidate then returns a view of that node's buffer and launches no kernel for it."""
    last, out = stages[-1], an.nodes[an.output]
    stored = {s.sink for s in stages}
    if last.anchor == an.output and out.op == "reshape" and out.refs()[0] in stored \
            and an.output_dtype == "torch.float32":
        return out.refs()[0]
    return None


def stage_writer_op(an: Analysis, stage: Stage) -> str:
    """The op whose writer writes `stage`: its anchor's, or "pointwise" for a stored
    pointwise node without an epilogue."""
    op = an.nodes[stage.anchor].op
    return op if stage.anchor != stage.sink or op in ANCHOR_OPS else "pointwise"


# Elements of one program's tile when stages share a tile of whole rows (`row_groups`): 8192
# fp32 is 64 registers a thread per live value at 4 warps, and the writer adds warps past 4096.
ROW_GROUP_TILE = 8192
# A longer row is streamed once per stage by one program (its re-reads hit L2, the row being
# at most 256 KiB) when there are rows enough to fill the GPU; else the stages stay apart,
# where a few long rows' reductions split over programs.
ROW_GROUP_STREAMED = 65536
ROW_GROUP_MIN_ROWS = 1024
ROW_GROUP_OPS = REDUCE_OPS - {"argmax", "argmin"}  # their ties need the streamed index


def row_groups(an: Analysis, stages: list[Stage]) -> list[list[int]]:
    """Runs of consecutive stages (indices into `stages`) that one kernel computes from a single
    tile of whole rows, so the rows are read once instead of once per stage: reductions of the
    same rows (same input shape, reduced dims and output), each reading the earlier ones'
    results only as its own row's value (a mean, then the variance around it), and
    optionally the pointwise stage over the rows' elements right after them (the
    normalisation, in any shape of the same elements: a GroupNorm's). A row of at most
    `ROW_GROUP_TILE` elements is read once; up to `ROW_GROUP_STREAMED`, when there are at least
    `ROW_GROUP_MIN_ROWS` rows, once per stage by the same program; other rows keep their own
    stages (where a few long rows' reductions split over programs)."""
    nodes, stored = an.nodes, {s.sink for s in stages}
    groups, k = [], 0
    while k < len(stages):
        rows = _row_space(nodes, stages[k])
        if rows is None:
            k += 1
            continue
        group, sinks = [k], {stages[k].sink}
        j = k + 1
        while j < len(stages) and _same_rows(_row_space(nodes, stages[j]), rows) and \
                _reduction_reads_rows(nodes, stages[j], rows, sinks, stored):
            group.append(j)
            sinks.add(stages[j].sink)
            j += 1
        if j < len(stages) and _pointwise_over(an, stages[j], rows, sinks, stored):
            group.append(j)
            j += 1
        if len(group) > 1:
            groups.append(group)
            k = j
        else:
            k += 1
    return groups


def streams_rows(an: Analysis, stage: Stage) -> bool:
    """Whether a row group that starts at this reduction streams its rows (once per stage)
    rather than holding each in one tile."""
    return _tile_of(_row_length(an.nodes, an.nodes[stage.anchor])) > ROW_GROUP_TILE


def _row_length(nodes, node: IRNode) -> int:
    """The elements a reduction node reduces into each of its outputs."""
    return math.prod(nodes[node.refs()[0]].shape[d] for d in node.attrs["dims"])


def _tile_of(n_red: int) -> int:
    """The writer's BLOCK_R for a row of `n_red` elements held in one tile."""
    return 1 << (n_red - 1).bit_length()


def moment_pairs(an: Analysis, stages: list[Stage], taken: set[int]) -> list[tuple[int, int]]:
    """(k, j): stage k takes a mean (a sum over some dims divided by their count) and stage j
    sums the squared deviations from it over the same elements (a variance): one kernel
    computes both in a single read (Welford's update per lane, Chan's merge across lanes and
    programs: writers/staged_moments.py), where the two stages read the elements twice and
    a GroupNorm or BatchNorm's statistics took two of its three passes. Stages in `taken`
    (row groups, which hold their rows already) are left alone."""
    nodes, pairs = an.nodes, []
    by_sink = {s.sink: k for k, s in enumerate(stages)}
    for j, dev in enumerate(stages):
        node = nodes[dev.anchor]
        deviation = _squared_operand(nodes, node.refs()[0]) if node.op == "sum" else None
        if j in taken or deviation is None or nodes[deviation].op != "sub":
            continue
        x, mean = nodes[deviation].operands
        k = by_sink.get(mean) if isinstance(x, int) and isinstance(mean, int) else None
        if k is None or k in taken or k >= j:
            continue
        total = nodes[stages[k].anchor]
        same = total.op == "sum" and total.refs() == [x] and \
            tuple(total.attrs["dims"]) == tuple(node.attrs["dims"])  # keepdim may differ
        if same and stages[k].epilogue == [mean] and \
                _divides_by_count(nodes[mean], total.id, _row_length(nodes, total)):
            pairs.append((k, j))
    return pairs


def _squared_operand(nodes, ref) -> int | None:
    """d where `ref` is d squared (square(d), d * d or d ** 2), else None."""
    if not isinstance(ref, int):
        return None
    node = nodes[ref]
    ops = node.operands
    if node.op == "square" and isinstance(ops[0], int):
        return ops[0]
    if node.op == "mul" and len(ops) == 2 and ops[0] == ops[1] and isinstance(ops[0], int):
        return ops[0]
    if node.op == "pow" and isinstance(ops[0], int) and not isinstance(ops[1], int) \
            and ops[1].value == 2:
        return ops[0]
    if node.op == "powc" and node.attrs.get("exponent") == 2 and isinstance(ops[0], int):
        return ops[0]
    return None


def _divides_by_count(node: IRNode, total: int, count: int) -> bool:
    """Whether `node` is `total` / count (or `total` * (1 / count))."""
    ops = node.operands
    if len(ops) != 2 or ops[0] != total or isinstance(ops[1], int):
        return False
    if node.op == "div":
        return ops[1].value == count
    return node.op == "mul" and math.isclose(ops[1].value * count, 1.0, rel_tol=1e-6)


def shared_kernels(an: Analysis, stages: list[Stage]) -> tuple[dict, dict, set]:
    """Which stages share a kernel: row groups (first stage -> the group's stages), moments
    pairs (mean stage -> variance stage), and the stages written by another's kernel."""
    groups = {group[0]: group for group in row_groups(an, stages)}
    pairs = dict(moment_pairs(an, stages, {k for group in groups.values() for k in group}))
    written_by_another = {k for group in groups.values() for k in group[1:]} | set(pairs.values())
    return groups, pairs, written_by_another


def moments_kernel_name(k: int) -> str:
    """The kernel of the moments pair whose mean stage is the k-th."""
    return f"kh_stage{k}_moments"


def row_group_kernel_name(k: int) -> str:
    """The kernel of the row group whose first stage is the k-th."""
    return f"kh_stage{k}_rows"


def _row_space(nodes, stage: Stage):
    """(input shape, reduced dims, output shape) of a reduction stage whose rows a group can
    take: in one tile, or streamed when they are many."""
    node = nodes[stage.anchor]
    if node.op not in ROW_GROUP_OPS:
        return None
    in_shape, dims = tuple(nodes[node.refs()[0]].shape), tuple(node.attrs["dims"])
    n_red = _row_length(nodes, node)
    fits = 1 < n_red and (_tile_of(n_red) <= ROW_GROUP_TILE or (
        n_red <= ROW_GROUP_STREAMED and math.prod(node.shape) >= ROW_GROUP_MIN_ROWS))
    return (in_shape, dims, tuple(node.shape)) if fits else None


def _same_rows(space, rows) -> bool:
    """Reductions of the same rows: the same input and reduced dims, whether or not each
    keeps the reduced dims (a cross-entropy's log-softmax keeps them, its pick does not)."""
    return space is not None and space[:2] == rows[:2]


def _reduction_reads_rows(nodes, stage: Stage, rows, sinks: set[int], stored: set[int]) -> bool:
    """A later reduction of the group: its input (over the tile) and its epilogue (over the
    rows, in its own output's shape) read the group's results only in place."""
    src = nodes[stage.anchor].refs()[0]
    own = (*rows[:2], tuple(nodes[stage.anchor].shape))
    return src not in sinks and _in_place(nodes, src, rows[0], rows, sinks, stored) and \
        _in_place(nodes, stage.sink, own[2], own, sinks, stored | {stage.anchor})


def _pointwise_over(an: Analysis, stage: Stage, rows, sinks: set[int], stored: set[int]) -> bool:
    """A pointwise stage over the rows' elements (any shape of as many elements), reading the
    group's results only in place."""
    shape = tuple(an.nodes[stage.sink].shape)
    return stage_writer_op(an, stage) == "pointwise" and \
        math.prod(shape) == math.prod(rows[0]) and \
        _in_place(an.nodes, stage.sink, shape, rows, sinks, stored - {stage.sink})


def _in_place(nodes, root: int, shape, rows, sinks: set[int], stored: set[int]) -> bool:
    """Whether, computing `root` at each position of a tile of `shape` (computed inline up to
    `stored` nodes and leaves), every read of one of `sinks` is of the row that position is in:
    each path to a sink runs through pointwise ops at that same position (no index op, no
    broadcast), and the sink is read broadcast along the reduced dims (over the rows' input)
    or as it is (over the rows themselves). A stage over another shape of the same elements may
    reach the input shape through a reshape, which keeps the element."""
    in_shape, dims, out_shape = rows
    want = tuple(1 if d in dims else size for d, size in enumerate(in_shape))
    reaches: dict[int, bool] = {}

    def reaches_sink(i: int) -> bool:
        if i not in reaches:
            reaches[i] = i in sinks or (nodes[i].op not in LEAVES and i not in stored and any(
                reaches_sink(r) for r in nodes[i].refs()))
        return reaches[i]

    stack, seen = [(root, tuple(shape))], set()
    while stack:
        i, at = stack.pop()
        if (i, at) in seen or not reaches_sink(i):
            continue
        seen.add((i, at))
        node = nodes[i]
        if i in sinks:
            return False  # a group result at a tile position (not read by a pointwise op)
        if node.op == "reshape" and tuple(node.shape) == at and at != in_shape and \
                tuple(nodes[node.refs()[0]].shape) == in_shape:
            stack.append((node.refs()[0], in_shape))
            continue
        if node.op not in POINTWISE_OPS or tuple(node.shape) != at:
            return False
        for ref in node.refs():
            if ref in sinks:
                if (at, tuple(nodes[ref].shape)) not in ((in_shape, want), (out_shape, out_shape)):
                    return False
            elif reaches_sink(ref):
                if tuple(nodes[ref].shape) != at:
                    return False  # a broadcast read: another position's value
                stack.append((ref, at))
    return True


def stage_kernel_name(k: int, an: Analysis, stage: Stage) -> str:
    """The name of the kernel that computes the k-th stage (after any dropped view stage)."""
    return f"kh_stage{k}_{an.nodes[stage.anchor].op}"


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


def operand_chain(nodes, ref, stored, slices: bool = True) -> tuple[IRNode, list[IRNode]]:
    """(base, views): the stored node or leaf a dot operand views, and the view ops from it
    to the operand, in the order they apply (with `slices`, slices are views too)."""
    node, chain = nodes[ref], []
    while node.id not in stored and (node.op in VIEW_OPS or (slices and node.op == "slice")):
        chain.append(node)
        node = nodes[node.refs()[0]]
    return node, chain[::-1]


def _plain_operand(nodes, ref, stored, slices: bool = False) -> bool:
    """A tensor a dot kernel can read with strides: a leaf, a stored node, or a permute /
    transpose / reshape of one (passed as a torch view; broadcast batch dims get stride 0);
    with `slices`, also through slices, where every reshape after one is a view (a head's
    part of a fused QKV projection: slice, split into heads, permute), not a copy."""
    base, chain = operand_chain(nodes, ref, stored, slices)
    if not ((base.op in LEAVES and not base.attrs.get("scalar")) or base.id in stored):
        return False
    return all(n.op != "slice" for n in chain) or _views_without_copy(tuple(base.shape), chain)


def _views_without_copy(shape, chain) -> bool:
    """Whether torch takes `chain` (slices, permutes, last-two transposes and reshapes, from
    a contiguous tensor of `shape`) as views: a reshape is one where its stride rule allows."""
    shape, strides = list(shape), contiguous_strides(shape)
    for view in chain:
        if view.op == "slice":
            strides[view.attrs["dim"]] *= view.attrs["step"]
        elif view.op == "transpose":
            strides[-2], strides[-1] = strides[-1], strides[-2]
        elif view.op == "permute":
            strides = [strides[p] for p in view.attrs["perm"]]
        else:
            strides = reshape_strides(shape, strides, view.shape)
            if strides is None:
                return False
        shape = list(view.shape)
    return True


def contiguous_strides(shape) -> list[int]:
    strides, acc = [], 1
    for s in reversed(tuple(shape)):
        strides.append(acc)
        acc *= s
    return list(reversed(strides))


def reshape_strides(shape, strides, new_shape) -> list[int] | None:
    """The strides of `new_shape` viewing a tensor of `shape` and `strides` without a copy,
    or None where `reshape` must copy (torch's rule: each run of dims it merges or splits
    must be contiguous within itself)."""
    if math.prod(shape) == 0 or not shape:
        return [1] * len(new_shape)
    out = [0] * len(new_shape)
    view_d, base = len(new_shape) - 1, strides[-1]
    tensor_numel = view_numel = 1
    for d in range(len(shape) - 1, -1, -1):
        tensor_numel *= shape[d]
        if d == 0 or (shape[d - 1] != 1 and strides[d - 1] != tensor_numel * base):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                out[view_d] = view_numel * base
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                base, tensor_numel, view_numel = strides[d - 1], 1, 1
    return out if view_d == -1 else None
