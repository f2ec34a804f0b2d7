"""Reductions grouped into passes over a row, for the rows family's writer (`rows.py`).

Which reductions share one loop over the row: independent ones do (``online`` and ``split``
variants), and two pairs are computed together — softmax's ``max`` and ``sum(exp(x - max))``
as one online pass, and ``sum(x)/n`` with ``sum((x - mean)**2)`` as exact merged moments.
`ReductionPasses` also writes a pass: the row-level values it needs first, then its loop of
accumulator steps (`rows_accumulators.py`) and the reductions' results."""

from __future__ import annotations

from search_engine.synthesis.offline.frontend.ir import REDUCTIONS
from search_engine.synthesis.offline.writers.codegen import operand, pointwise
from search_engine.synthesis.offline.writers.rows_accumulators import (
    LANE_MOMENTS, accumulator_init, accumulator_result, accumulator_step, lane_moments_step,
    moments_step, online_step,
)


class ReductionPairs(dict):
    """Reductions computed with a partner in one pass: {reduction: (kind, partner)}."""

    def __init__(self):
        super().__init__()
        self.values_partners: set[int] = set()

    def leaders(self, group: list[int]):
        """(reduction, kind, partner) for each reduction that carries a result (a pair's
        partner is carried by its pair; kind "" for a reduction on its own)."""
        for i in group:
            if i not in self.values_partners:
                yield (i, *self.get(i, ("", None)))


class ReductionPasses:
    """Pass grouping and pass writing for `rows.RowsWriter` (a mixin): uses its `nodes`,
    `ids`, `level` and `leaves`, `row_length()` and `_emit_full()`."""

    def _reductions_under(self, i: int, stop: set[int] = frozenset()) -> set[int]:
        """The reductions node `i` depends on (not looking through `stop`)."""
        found, stack, seen = set(), list(self.nodes[i].refs()), set()
        while stack:
            j = stack.pop()
            if j in seen or j not in self.nodes:
                continue
            seen.add(j)
            if self.nodes[j].op in REDUCTIONS:
                found.add(j)
            if j not in stop:
                stack.extend(self.nodes[j].refs())
        return found

    def online_partner(self, i: int) -> int | None:
        """For ``sum(exp(f - max(f)))`` (softmax, log-softmax): the max reduction's id."""
        node = self.nodes[i]
        if node.op != "sum":
            return None
        ex = self.nodes.get(node.refs()[0])
        if ex is None or ex.op != "exp" or len(ex.refs()) != 1:
            return None
        sub = self.nodes.get(ex.refs()[0])
        if sub is None or sub.op != "sub" or len(sub.operands) != 2 or \
                not all(isinstance(a, int) for a in sub.operands):
            return None
        f, m = sub.operands
        peak = self.nodes.get(m)
        if peak is None or peak.op != "max" or peak.refs()[0] != f:
            return None
        return m

    def moments_partner(self, i: int) -> int | None:
        """For ``sum((f - sum(f)/n)**2)`` (variance, layer norm): the first sum's id. Both
        come from one pass: per chunk a mean and squared deviations, merged exactly (Chan)."""
        node = self.nodes[i]
        if node.op != "sum":
            return None
        sq = self.nodes.get(node.refs()[0])
        if sq is None:
            return None
        if sq.op == "square" or (sq.op == "powc" and sq.attrs.get("exponent") == 2):
            centred = sq.refs()[0] if len(sq.refs()) == 1 else None
        elif sq.op == "mul" and len(sq.operands) == 2 and sq.operands[0] == sq.operands[1]:
            centred = sq.operands[0]
        else:
            return None
        sub = self.nodes.get(centred) if isinstance(centred, int) else None
        if sub is None or sub.op != "sub" or len(sub.operands) != 2 or \
                not all(isinstance(a, int) for a in sub.operands):
            return None
        f, mu = sub.operands
        mean = self.nodes[mu]
        if mean.op != "div" or len(mean.operands) != 2 or not isinstance(mean.operands[0], int) \
                or getattr(mean.operands[1], "value", None) != float(self.row_length()):
            return None
        total = self.nodes[mean.operands[0]]
        return total.id if total.op == "sum" and total.refs()[0] == f else None

    def partner(self, i: int) -> tuple[str, int] | None:
        for kind, find in (("online", self.online_partner), ("moments", self.moments_partner)):
            found = find(i)
            if found is not None:
                return kind, found
        return None

    def _reduction_groups(self, merge: bool) -> list[list[int]]:
        reductions = [i for i in self.ids if self.nodes[i].op in REDUCTIONS]
        groups: list[list[int]] = []
        for i in reductions:
            pair = self.partner(i) if merge else None
            partner = pair[1] if pair else None
            deps = self._reductions_under(i) - ({partner} if partner is not None else set())
            if groups and merge and not deps & set(groups[-1]) and \
                    (partner is None or partner in groups[-1]):
                groups[-1].append(i)
            else:
                groups.append([i])
        return groups

    def _emit_row_deps(self, b, group: list[int], names: dict) -> None:
        """Row-level values the group's inputs need, before its loop."""
        needed, stack = set(), [r for i in group for r in self.nodes[i].refs()]
        while stack:
            j = stack.pop()
            if j in needed or j in names or j not in self.nodes:
                continue
            if self.nodes[j].op in REDUCTIONS or self._reductions_under(j) & set(group):
                continue  # computed by (or after) this pass
            if self.level.get(j) == "row":
                needed.add(j)
            stack.extend(self.nodes[j].refs())
        for j in self.ids:
            if j in needed:
                node = self.nodes[j]
                b.append(f"r{j} = " + pointwise(node, [operand(a, names)
                                                       for a in node.operands]))
                names[j] = f"r{j}"

    def _reduction_pass(self, b, group: list[int], names: dict) -> None:
        paired = self._pass_loop(b, group, names, "for start in range(0, R, BLOCK_R):", "R")
        for i, kind, p in paired.leaders(group):
            if kind == "online":
                b.append(f"r{p} = tl.max(acc{p}, axis=1)[:, None]")
                b.append(f"r{i} = tl.sum(acc{i} * tl.exp(acc{p} - r{p}), axis=1)[:, None]")
            elif kind == "moments":
                b.append(f"r{p} = mu{i} * cnt{i}")
                b.append(f"r{i} = m2{i}")
            else:
                b.append(accumulator_result(i, self.nodes[i].op))
        for i in group:
            names[i] = f"r{i}"

    def _pass_loop(self, b, group: list[int], names: dict, head: str, end: str,
                   lanes: bool = False) -> "ReductionPairs":
        """Accumulators, then one loop (`head`) over the chunks below `end` updating every
        reduction of the group; returns the pairs computed together. `lanes`: a mean and
        variance pair keeps per-lane shifted sums (no block reduction inside the loop)."""
        paired = self._group_pairs(group)
        for i in group:
            kind = paired.get(i, ("",))[0]
            if kind == "online":
                b.append(f"acc{i} = tl.zeros([ROWS, BLOCK_R], dtype=tl.float32)")
            elif kind == "moments" and lanes:
                b += [f"{v}{i} = tl.zeros([ROWS, BLOCK_R], dtype=tl.float32)"
                      for v in LANE_MOMENTS]
            elif kind == "moments":
                b += [f"{v}{i} = tl.zeros([ROWS, 1], dtype=tl.float32)"
                      for v in ("cnt", "mu", "m2")]
            elif i in paired.values_partners and self.nodes[i].op == "sum":
                continue  # the moments pair keeps its sum as a mean
            else:
                b.extend(accumulator_init(i, self.nodes[i].op))
        b.append(head)
        loop = ["cols = start + tl.arange(0, BLOCK_R)[None, :]",
                f"mask = row_mask & (cols < {end})"]
        local = dict(names)
        for i in group:
            if i in paired.values_partners:
                continue  # updated with its partner's step
            kind, p = paired.get(i, ("", None))
            src = self.nodes[p].refs()[0] if kind else self.nodes[i].refs()[0]
            local = self._emit_full(loop, {src}, local, "cols", "mask")
            if kind == "online":
                loop += online_step(i, p, local[src])
            elif kind == "moments":
                loop += lane_moments_step(i, local[src]) if lanes else \
                    moments_step(i, local[src])
            else:
                loop += accumulator_step(i, self.nodes[i].op, local[src])
        b.extend("    " + line for line in loop)
        return paired

    def _group_pairs(self, group: list[int]) -> "ReductionPairs":
        paired = ReductionPairs()
        for i in group:
            pair = self.partner(i)
            if pair is not None and pair[1] in group:
                paired[i] = pair
                paired.values_partners.add(pair[1])
        return paired
