"""Scans: cumsum and cumprod along one dim (a stage of the staged family, see staged.py).

A tile of BLOCK_O rows × BLOCK_R positions along the scanned dim; each chunk is scanned with
`tl.cumsum` / `tl.cumprod` and continued from the previous chunks' carry. Reversed scans
(``x.flip(d).cumsum(d).flip(d)``), exclusive scans (a shifted or concatenated input) and
masked scans (``x * mask``) are the index and pointwise ops around the scan, read through
`staged.Expr` and fused as epilogue.
"""

from __future__ import annotations

import math

from search_engine.synthesis.offline import staged


def write(ctx, stage, name):
    node = ctx.nodes[stage.anchor]
    src, dim, mode = node.refs()[0], node.attrs["dim"], node.attrs["mode"]
    shape = node.shape
    others = [s for d, s in enumerate(shape) if d != dim]
    n_rows, length = math.prod(others), shape[dim]
    block_o = min(ctx.params["BLOCK_O"], staged.p2(n_rows))
    block_r = max(2, min(ctx.params["BLOCK_R"], staged.p2(length), max(2, 8192 // block_o)))
    body = ["pid = tl.program_id(0).to(tl.int64)",
            "rows = pid * BLOCK_O + tl.arange(0, BLOCK_O)",
            f"omask = rows < {n_rows}"]
    expr = staged.Expr(ctx, body)
    row_idx = iter(staged.unravel(body, "rows", others, "o"))
    init = "0.0" if mode == "sum" else "1.0"
    body.append(f"carry = tl.full([BLOCK_O], {init}, tl.float32)")
    body.append(f"for r_start in range(0, {length}, BLOCK_R):")
    inner = ["rr = r_start + tl.arange(0, BLOCK_R).to(tl.int64)",
             f"m2 = omask[:, None] & (rr < {length})[None, :]"]
    expr.body = inner
    idx = tuple("rr[None, :]" if d == dim else _col(next(row_idx)) for d in range(len(shape)))
    v = expr.value(src, idx, "m2")
    if mode == "sum":
        inner.append(f"vals = tl.where(m2, {v}, 0.0)")
        inner.append("scanned = tl.cumsum(vals, axis=1) + carry[:, None]")
        inner.append("carry += tl.sum(vals, axis=1)")
    else:
        inner.append(f"vals = tl.where(m2, {v}, 1.0)")
        inner.append("scanned = tl.cumprod(vals, axis=1) * carry[:, None]")
        inner.append("carry = carry * tl.reduce(vals, 1, _kh_mul)")
    expr.subst[stage.anchor] = "scanned"
    staged.store_epilogue(ctx, expr, stage, idx, "m2",
                          "tl.zeros([BLOCK_O, BLOCK_R], tl.float32)")
    body.extend("    " + line for line in inner)
    grid = f"(triton.cdiv({n_rows}, {block_o}),)"
    source = staged.kernel_source(name, ctx, ["BLOCK_O", "BLOCK_R"], body)
    if mode == "prod":
        source = "@triton.jit\ndef _kh_mul(a, b):\n    return a * b\n\n\n" + source
    return source, [staged.launch(name, ctx, grid, {"BLOCK_O": block_o, "BLOCK_R": block_r},
                                  ctx.params["num_warps"])]


def _col(i: str) -> str:
    return i if i == "0" else f"({i})[:, None]"
