"""Triton lines for the rows family's accumulators (`rows.py`, `rows_passes.py`,
`rows_split.py`): block reductions of a whole row, per-lane accumulators stepped chunk by
chunk and reduced after the loop, online softmax (running max and rescaled sum), and a mean
with its squared deviations (per chunk, or per lane with a shift) merged exactly (Chan)."""

from __future__ import annotations

from search_engine.synthesis.offline.writers.codegen import NEG_INF, POS_INF


def reduce_block(op: str, x: str, mask: str) -> str:
    if op == "sum":
        return f"tl.sum(tl.where({mask}, {x}, 0.0), axis=1)[:, None]"
    if op in ("max", "argmax"):
        return f"tl.{op}(tl.where({mask}, {x}, {NEG_INF}), axis=1)[:, None]"
    return f"tl.{op}(tl.where({mask}, {x}, {POS_INF}), axis=1)[:, None]"


def accumulator_init(i: int, op: str) -> list[str]:
    init = {"sum": "tl.zeros([ROWS, BLOCK_R], dtype=tl.float32)",
            "max": f"tl.full([ROWS, BLOCK_R], {NEG_INF}, tl.float32)",
            "min": f"tl.full([ROWS, BLOCK_R], {POS_INF}, tl.float32)"}
    if op in init:
        return [f"acc{i} = {init[op]}"]
    # an index reduction keeps each lane's best and its column, reduced after the loop (as
    # Inductor does): no reduction across the tile at every chunk
    fill = NEG_INF if op == "argmax" else POS_INF
    return [f"best{i} = tl.full([ROWS, BLOCK_R], {fill}, tl.float32)",
            f"idx{i} = tl.zeros([ROWS, BLOCK_R], dtype=tl.int32)"]


def accumulator_step(i: int, op: str, x: str) -> list[str]:
    if op == "sum":
        return [f"acc{i} += tl.where(mask, {x}, 0.0)"]
    if op in ("max", "min"):
        fn, fill = ("tl.maximum", NEG_INF) if op == "max" else ("tl.minimum", POS_INF)
        return [f"acc{i} = {fn}(acc{i}, tl.where(mask, {x}, {fill}))"]
    # strictly better only: a lane's columns only grow, so it keeps its first best
    fill, cmp = (NEG_INF, ">") if op == "argmax" else (POS_INF, "<")
    return [f"m{i} = tl.where(mask, {x}, {fill})",
            f"take{i} = m{i} {cmp} best{i}",
            f"best{i} = tl.where(take{i}, m{i}, best{i})",
            f"idx{i} = tl.where(take{i}, cols, idx{i})"]


def accumulator_result(i: int, op: str) -> str:
    if op in ("sum", "max", "min"):
        return f"r{i} = tl.{op}(acc{i}, axis=1)[:, None]"
    # the first column holding the row's best value, whichever lane saw it
    red = "tl.max" if op == "argmax" else "tl.min"
    return (f"r{i} = tl.min(tl.where(best{i} == {red}(best{i}, axis=1)[:, None], idx{i}, "
            f"2147483647), axis=1)[:, None]")


def online_step(s: int, m: int, x: str) -> list[str]:
    """Online softmax: a running max per lane and the sum rescaled when the max grows
    (lanes still at -inf contribute 0, never NaN)."""
    return [f"xm{s} = tl.where(mask, {x}, {NEG_INF})",
            f"mnew{s} = tl.maximum(acc{m}, xm{s})",
            f"msafe{s} = tl.where(mnew{s} == {NEG_INF}, 0.0, mnew{s})",
            f"acc{s} = acc{s} * tl.exp(acc{m} - msafe{s}) + tl.exp(xm{s} - msafe{s})",
            f"acc{m} = mnew{s}"]


def moments_step(i: int, x: str) -> list[str]:
    """Count, mean and squared deviations of one chunk, merged into the running ones
    (Chan et al.): exact in one read, no E[x^2] - E[x]^2 cancellation."""
    return [f"ccnt{i} = tl.sum(mask.to(tl.float32), axis=1)[:, None]",
            f"cmu{i} = tl.sum(tl.where(mask, {x}, 0.0), axis=1)[:, None] "
            f"/ tl.maximum(ccnt{i}, 1.0)",
            f"cd{i} = tl.where(mask, {x} - cmu{i}, 0.0)",
            f"cm2{i} = tl.sum(cd{i} * cd{i}, axis=1)[:, None]",
            f"ntot{i} = cnt{i} + ccnt{i}",
            f"delta{i} = cmu{i} - mu{i}",
            f"mu{i} = mu{i} + delta{i} * ccnt{i} / tl.maximum(ntot{i}, 1.0)",
            f"m2{i} = m2{i} + cm2{i} + delta{i} * delta{i} * cnt{i} * ccnt{i} "
            f"/ tl.maximum(ntot{i}, 1.0)",
            f"cnt{i} = ntot{i}"]


LANE_MOMENTS = ("cnt", "sh", "s1", "s2")


def lane_moments_step(i: int, x: str) -> list[str]:
    """Per lane: the count and the sums of x - shift and its square, the shift being the
    lane's first value (so the sums stay small and E[d^2] - E[d]^2 does not cancel)."""
    return [f"sh{i} = tl.where(start == seg_lo, {x}, sh{i})",
            f"d{i} = tl.where(mask, {x} - sh{i}, 0.0)",
            f"cnt{i} += mask.to(tl.float32)",
            f"s1{i} += d{i}",
            f"s2{i} += d{i} * d{i}"]


def lane_moments_merge(i: int) -> list[str]:
    """A program's count, mean and squared deviations from its lanes (Chan): `wcnt`, `wmu`,
    `wm2`. Lanes that saw nothing carry weight 0 (their shift may be anything)."""
    return [f"ln{i} = tl.maximum(cnt{i}, 1.0)",
            f"lmu{i} = tl.where(cnt{i} > 0, sh{i} + s1{i} / ln{i}, 0.0)",
            f"lm2{i} = s2{i} - s1{i} * (s1{i} / ln{i})",
            f"wcnt{i} = tl.sum(cnt{i})",
            f"wmu{i} = tl.sum(cnt{i} * lmu{i}) / tl.maximum(wcnt{i}, 1.0)",
            f"ld{i} = tl.where(cnt{i} > 0, lmu{i} - wmu{i}, 0.0)",
            f"wm2{i} = tl.sum(lm2{i}) + tl.sum(cnt{i} * ld{i} * ld{i})"]
