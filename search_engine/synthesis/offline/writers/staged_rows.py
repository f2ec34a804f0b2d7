"""A row group of the staged family (`plan/stages.row_groups`) as one kernel: each program
owns BLOCK_O rows, computes the group's reductions one after the other (a later one reads an
earlier one's result from registers, broadcast along the row), stores each result, and
writes the pointwise stage over the rows' elements. A row of at most `ROW_GROUP_TILE`
elements is one [BLOCK_O, BLOCK_R] tile loaded once: a GroupNorm or InstanceNorm after a
conv reads the conv's output once, not three times (mean, variance, normalisation). A longer
row is streamed in BLOCK_R chunks once per stage by the same program, so its second and
third reads are of data it has just read (from L2), not of a tensor another kernel wrote."""

from __future__ import annotations

import math

from search_engine.synthesis.offline.plan import stages as stages_plan
from search_engine.synthesis.offline.plan.stages import REDUCE_OPS, Stage, streams_rows
from search_engine.synthesis.offline.writers.staged_context import (
    Context, kernel_source, launch, p2, store_epilogue, unravel,
)
from search_engine.synthesis.offline.writers.staged_expr import Expr, reshape_index
from search_engine.synthesis.offline.writers.staged_writers import (
    ACROSS, accumulate, reduce_once, reduction_tile, tile_finish, tile_index, tile_start,
    with_combine,
)

ROW_MASK, TILE_MASK = "omask", "m2"  # the masks of the rows' values and of the tile's


class RowExpr(Expr):
    """`Expr` that reads the group's results from registers: a row's value ([BLOCK_O]) where
    the rows are computed (their epilogues, under ROW_MASK), broadcast along the tile's row
    ([BLOCK_O, 1]) where the tile is (under TILE_MASK). The plan (`stages._in_place`) made
    sure every such read is of the row being computed."""

    def __init__(self, ctx, body: list[str], in_shape):
        super().__init__(ctx, body)
        self.rows: dict[int, str] = {}
        self.in_shape = tuple(in_shape)
        # (shape, index) of a stage over another shape of the rows' elements -> the tile's
        # own index: a reshape back to the rows' input reads the element already loaded
        self.same_element: dict[tuple, tuple] = {}

    def value(self, ref, idx, mask: str) -> str:
        if isinstance(ref, int) and ref in self.rows:
            return self.rows[ref] if mask == ROW_MASK else f"({self.rows[ref]})[:, None]"
        return super().value(ref, idx, mask)

    def load(self, ref: int, idx, mask) -> str:
        # a tile value the same all along its row (a cross-entropy's target class, a row's
        # bias) is loaded once a row, [BLOCK_O, 1], not once an element: the reduced dims'
        # indices are the only ones across the tile (`tile_index`)
        if mask == TILE_MASK and ACROSS not in self.offset(ref, idx):
            mask = f"{ROW_MASK}[:, None]"
        return super().load(ref, idx, mask)

    def _index_op(self, node, idx, mask) -> str:
        back = self.same_element.get((tuple(node.shape), tuple(idx)))
        src = node.operands[0]
        if node.op == "reshape" and back is not None and \
                tuple(self.ctx.nodes[src].shape) == self.in_shape:
            return self.value(src, back, mask)
        return super()._index_op(node, idx, mask)


def write_row_group(ctx: Context, stages: list[Stage], name: str) -> tuple[str, list[str]]:
    first = ctx.nodes[stages[0].anchor]
    in_shape, dims = ctx.nodes[first.refs()[0]].shape, tuple(first.attrs["dims"])
    n_out, n_red = math.prod(first.shape), math.prod(in_shape[d] for d in dims)
    streamed = streams_rows(ctx.an, stages[0])
    if streamed:  # a row per BLOCK_R chunk, once per stage: the re-reads come from L2
        block_o, block_r = reduction_tile(ctx.params, n_out, n_red)
    else:  # the whole row in one tile, loaded once
        block_r = p2(n_red)
        block_o = max(1, min(ctx.params["BLOCK_O"], p2(n_out),
                             stages_plan.ROW_GROUP_TILE // block_r))
    body = ["pid = tl.program_id(0).to(tl.int64)",
            "offs = pid * BLOCK_O + tl.arange(0, BLOCK_O)",
            f"{ROW_MASK} = offs < {n_out}"]
    expr = RowExpr(ctx, body, in_shape)
    out_idx = tuple(unravel(body, "offs", first.shape, "o"))
    kept = [d for d in range(len(in_shape)) if d not in dims]
    tile = _Tile(in_shape, dims, [out_idx[d] for d in kept] if first.attrs.get("keepdim")
                 else list(out_idx), n_red, streamed)
    ops = set()
    for stage in stages:
        anchor = ctx.nodes[stage.anchor]
        if anchor.op in REDUCE_OPS:
            ops.add(anchor.op)
            _reduce_rows(ctx, expr, tile, stage, _rows_index(anchor, tile.kept_idx, out_idx))
        else:
            _store_tile(ctx, expr, tile, stage)
    consts = {"BLOCK_O": block_o, "BLOCK_R": block_r}
    # more warps for a larger tile, so each thread's share of every live value stays small
    warps = max(ctx.params["num_warps"], min(8, block_o * block_r // 1024))
    grid = f"(triton.cdiv({n_out}, {block_o}),)"
    combine = "".join(with_combine(op) for op in sorted(ops))
    return (combine + kernel_source(name, ctx, list(consts), body),
            [launch(name, ctx, grid, consts, warps)])


def _rows_index(anchor, kept_idx, first_idx) -> tuple:
    """A reduction's output index from the rows' kept dims: the first stage's index where the
    shapes agree, else with or without the reduced dims (kept as size 1) as it keeps them."""
    if len(anchor.shape) == len(first_idx):
        return first_idx
    if not anchor.attrs.get("keepdim"):
        return tuple(kept_idx)
    kept = iter(kept_idx)
    return tuple("0" if d in anchor.attrs["dims"] else next(kept)
                 for d in range(len(anchor.shape)))


class _Tile:
    """The [BLOCK_O, BLOCK_R] tile of the rows' input: written once at the top of the kernel
    (a row in one tile), or at the top of each stage's loop over the row's chunks."""

    def __init__(self, in_shape, dims, kept_idx, n_red: int, streamed: bool):
        self.in_shape, self.dims, self.kept_idx = in_shape, dims, kept_idx
        self.n_red, self.streamed = n_red, streamed
        self.full: tuple | None = None

    def open(self, expr: RowExpr) -> tuple[list[str], tuple]:
        """(the lines the stage's tile work goes into, the tile's index of the rows' input)."""
        if not self.streamed:
            if self.full is None:
                self.full = self._index(expr.body, "tl.arange(0, BLOCK_R).to(tl.int64)")
            return expr.body, self.full
        expr.body.append(f"for r_start0 in range(0, {self.n_red}, BLOCK_R):")
        inner: list[str] = []
        expr.cache = {}  # nothing loaded in another loop is in scope here
        return inner, self._index(inner, "r_start0 + tl.arange(0, BLOCK_R).to(tl.int64)")

    def close(self, expr: RowExpr, body: list[str], inner: list[str]) -> None:
        if self.streamed:
            body.extend("    " + line for line in inner)
            expr.cache = {}

    def _index(self, lines: list[str], rr: str) -> tuple:
        lines += [f"rr = {rr}", f"rmask = rr < {self.n_red}"]
        full = tile_index(lines, self.in_shape, self.dims, self.kept_idx)
        lines.append(f"{TILE_MASK} = {ROW_MASK}[:, None] & rmask[None, :]")
        return tuple(full)


def _reduce_rows(ctx: Context, expr: RowExpr, tile: _Tile, stage: Stage, out_idx) -> None:
    """One reduction of the group over the tile (or the row's chunks), its epilogue, its
    store; its result then stays in a register for the stages after it."""
    anchor = ctx.nodes[stage.anchor]
    body = expr.body
    if tile.streamed:
        body.extend(tile_start(anchor.op))
    inner, full = tile.open(expr)
    expr.body = inner
    value = expr.value(anchor.refs()[0], full, TILE_MASK)
    inner.extend(accumulate(anchor.op, value) if tile.streamed
                 else reduce_once(anchor.op, value))
    tile.close(expr, body, inner)
    expr.body = body
    if tile.streamed:
        body.extend(tile_finish(anchor.op))
    body.append(f"acc{stage.anchor} = acc")
    expr.subst[stage.anchor] = f"acc{stage.anchor}"
    store_epilogue(ctx, expr, stage, out_idx, ROW_MASK, "tl.zeros([BLOCK_O], tl.float32)")
    expr.rows[stage.sink] = Expr.value(expr, stage.sink, out_idx, ROW_MASK)  # the stored value


def _store_tile(ctx: Context, expr: RowExpr, tile: _Tile, stage: Stage) -> None:
    """The pointwise stage over the rows' elements (in their shape or another one of as many
    elements, each at the tile position of its row-major flat index), from the tile already
    loaded (or the row's chunks again)."""
    body = expr.body
    inner, full = tile.open(expr)
    expr.body = inner
    shape, idx = tuple(ctx.nodes[stage.sink].shape), full
    if shape != expr.in_shape:
        idx = reshape_index(full, expr.in_shape, shape)
        expr.same_element[(shape, idx)] = full
    expr.local.add(stage.sink)
    value = expr.value(stage.sink, idx, TILE_MASK)
    out = ctx.pointer(stage.sink)
    inner.append(f"tl.store({out} + {expr.offset(stage.sink, idx)}, ({value} + "
                 f"tl.zeros([BLOCK_O, BLOCK_R], tl.float32)).to({out}.dtype.element_ty), "
                 f"mask={TILE_MASK})")
    tile.close(expr, body, inner)
    expr.body = body
