"""Scans: cumsum, cumprod, cummax and cummin (values or indices), logcumsumexp along one
dim (a stage of the staged family, see staged.py).

A tile of BLOCK_O rows × BLOCK_R positions along the scanned dim; each chunk is scanned with
`tl.cumsum` / `tl.cumprod` / `tl.associative_scan` and continued from the previous chunks'
carry (cummax's index scan carries the running extreme and its position; ties take the later
position, as torch). Reversed scans
(``x.flip(d).cumsum(d).flip(d)``), exclusive scans (a shifted or concatenated input) and
masked scans (``x * mask``) are the index and pointwise ops around the scan, read through
`Expr` and fused as epilogue.
"""

from __future__ import annotations

import math

from search_engine.synthesis.offline.writers.staged_context import (
    kernel_source, launch, p2, store_epilogue, unravel,
)
from search_engine.synthesis.offline.writers.staged_expr import Expr


def write(ctx, stage, name):
    node = ctx.nodes[stage.anchor]
    src, dim, mode = node.refs()[0], node.attrs["dim"], node.attrs["mode"]
    shape = node.shape
    others = [s for d, s in enumerate(shape) if d != dim]
    n_rows, length = math.prod(others), shape[dim]
    block_o = min(ctx.params["BLOCK_O"], p2(n_rows))
    block_r = max(2, min(ctx.params["BLOCK_R"], p2(length), max(2, 8192 // block_o)))
    body = ["pid = tl.program_id(0).to(tl.int64)",
            "rows = pid * BLOCK_O + tl.arange(0, BLOCK_O)",
            f"omask = rows < {n_rows}"]
    expr = Expr(ctx, body)
    row_idx = iter(unravel(body, "rows", others, "o"))
    body.append(f"carry = tl.full([BLOCK_O], {_INIT[mode]}, tl.float32)")
    if mode in ("argmax", "argmin"):
        body.append("carry_i = tl.zeros([BLOCK_O], tl.int64)")
    body.append(f"for r_start in range(0, {length}, BLOCK_R):")
    inner = ["rr = r_start + tl.arange(0, BLOCK_R).to(tl.int64)",
             f"m2 = omask[:, None] & (rr < {length})[None, :]"]
    expr.body = inner
    idx = tuple("rr[None, :]" if d == dim else _col(next(row_idx)) for d in range(len(shape)))
    v = expr.value(src, idx, "m2")
    inner.append(f"vals = tl.where(m2, {v}, {_INIT[mode]})")
    inner.extend(_SCAN[mode])
    expr.subst[stage.anchor] = "scanned"
    store_epilogue(ctx, expr, stage, idx, "m2",
                          "tl.zeros([BLOCK_O, BLOCK_R], tl.float32)")
    body.extend("    " + line for line in inner)
    grid = f"(triton.cdiv({n_rows}, {block_o}),)"
    source = kernel_source(name, ctx, ["BLOCK_O", "BLOCK_R"], body)
    if mode in _COMBINE:
        source = _COMBINE[mode] + source
    return source, [launch(name, ctx, grid, {"BLOCK_O": block_o, "BLOCK_R": block_r},
                                  ctx.params["num_warps"])]


def _col(i: str) -> str:
    return i if i == "0" else f"({i})[:, None]"


_INIT = {"sum": "0.0", "prod": "1.0", "max": "float('-inf')", "min": "float('inf')",
         "argmax": "float('-inf')", "argmin": "float('inf')", "logsumexp": "float('-inf')"}
_SCAN = {
    "sum": ["scanned = tl.cumsum(vals, axis=1) + carry[:, None]",
            "carry += tl.sum(vals, axis=1)"],
    "prod": ["scanned = tl.cumprod(vals, axis=1) * carry[:, None]",
             "carry = carry * tl.reduce(vals, 1, _kh_mul)"],
    "max": ["scanned = tl.maximum(tl.associative_scan(vals, 1, _kh_max), carry[:, None])",
            "carry = tl.maximum(carry, tl.max(vals, axis=1))"],
    "min": ["scanned = tl.minimum(tl.associative_scan(vals, 1, _kh_min), carry[:, None])",
            "carry = tl.minimum(carry, tl.min(vals, axis=1))"],
    "logsumexp": ["scanned = _kh_lse(tl.associative_scan(vals, 1, _kh_lse), carry[:, None])",
                  "carry = _kh_lse(carry, tl.reduce(vals, 1, _kh_lse))"],
}
for _mode, _cmp in (("argmax", ">="), ("argmin", "<=")):
    _SCAN[_mode] = [
        "pos = rr[None, :] + tl.zeros([BLOCK_O, BLOCK_R], tl.int64)",
        f"best, at = tl.associative_scan((vals, pos), 1, _kh_{_mode})",
        f"later = best {_cmp} carry[:, None]",
        "scanned = tl.where(later, at, carry_i[:, None])",
        f"chunk_best, chunk_at = tl.reduce((vals, pos), 1, _kh_{_mode})",
        f"take = chunk_best {_cmp} carry",
        "carry_i = tl.where(take, chunk_at, carry_i)",
        "carry = tl.where(take, chunk_best, carry)",
    ]
_COMBINE = {
    "prod": "@triton.jit\ndef _kh_mul(a, b):\n    return a * b\n\n\n",
    "max": "@triton.jit\ndef _kh_max(a, b):\n    return tl.maximum(a, b)\n\n\n",
    "min": "@triton.jit\ndef _kh_min(a, b):\n    return tl.minimum(a, b)\n\n\n",
    # log(e^a + e^b) around the larger one; two -inf give -inf, not NaN
    "logsumexp": "@triton.jit\ndef _kh_lse(a, b):\n    top = tl.maximum(a, b)\n"
                 "    top = tl.where(top == float('-inf'), 0.0, top)\n"
                 "    return top + tl.log(tl.exp(a - top) + tl.exp(b - top))\n\n\n",
    # the later position wins a tie whatever order the reduction combines in
    **{mode: f"@triton.jit\ndef _kh_{mode}(a, i, b, j):\n"
             f"    later = (b {cmp} a) | ((b == a) & (j > i))\n"
             "    return tl.where(later, b, a), tl.where(later, j, i)\n\n\n"
       for mode, cmp in (("argmax", ">"), ("argmin", "<"))},
}
