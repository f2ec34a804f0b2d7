"""The rows family: reductions over (adjacent) dims and what follows them per row.

One program per ``ROWS`` rows. ``single`` keeps a whole row in registers (``BLOCK_R`` = next
power of two ≥ row length): one read, one write. ``looped`` streams the row in chunks of
``BLOCK_R``, one pass per reduction (values are recomputed, never stored), then a last pass
for the output. ``online`` streams like ``looped`` but runs independent reductions in one
pass and softmax's max and sum as one online pass (2 reads + 1 write instead of 3 + 1), and
writes the output last chunk first so the chunks read most recently are still in L2;
``sum((x - mean)**2)`` is computed with its mean in the same pass (per-chunk moments merged
exactly). ``split`` spreads each row over ``SPLIT`` programs (for few, long rows: LayerNorm
over 4M elements has 16 rows for 132 SMs): one kernel per pass writes per-program partial
results to a small fp32 workspace, the next kernel combines them and goes on. Its loops keep
per-lane accumulators and reduce once after the loop (no block-wide reduction per chunk, so
loads stay in flight); a mean and variance pair keeps per-lane sums shifted by the lane's
first value, exact enough in fp32 for rows of millions, merged over lanes and programs with
Chan's formula. Broadcast operands spanning the whole row (LayerNorm's weight and bias) are
read at the row's flat index, so they load as contiguous vectors.

Strided rows (a reduction over a middle dim, e.g. RMSNorm over channels) take many
neighbouring rows per program, addressed so their loads coalesce.
"""

from __future__ import annotations

import math

from search_engine.synthesis.offline import codegen
from search_engine.synthesis.offline.analysis import LEAVES, REDUCTIONS, Analysis
from search_engine.synthesis.offline.codegen import (
    NEG_INF, POS_INF, Kernel, an_extra_leaves, leaf_kind, operand, pointwise, unravel,
    varying_dims,
)


class RowsWriter:
    """Writes one rows kernel for the nodes `ids` of `an` (reductions over `an.reduce_dims`)."""

    def __init__(self, an: Analysis, ids: list[int], out_id: int, name: str, params: dict):
        self.an, self.ids, self.out_id, self.name, self.p = an, ids, out_id, name, params
        self.nodes = an.nodes
        self.shape = tuple(an.row_shape)
        self.d0, self.d1 = an.reduce_dims[0], an.reduce_dims[-1]
        self.leaves = [i for i in ids if self.nodes[i].op in LEAVES or i in an_extra_leaves(an)]
        self.level = self._levels()
        self.split = params.get("variant") == "split"

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
        k.params += self._shape_params()
        b = k.body
        b.append("pid = tl.program_id(0)")
        b.append("rows = pid * ROWS + tl.arange(0, ROWS)[:, None]")
        b.append("row_mask = rows < n_rows")
        if self.inner() > 1 and self.inner() % self.p.get("ROWS", 1) == 0:
            # a strided reduction (over a middle dim): a program's rows are neighbours in
            # memory, written so Triton sees them contiguous (coalesced, vector loads)
            b.append("outer = (pid * ROWS) // INNER")
            b.append("inner = (pid * ROWS) % INNER + tl.arange(0, ROWS)[:, None]")
        else:
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

    def _shape_params(self) -> list[str]:
        params = ["n_rows", "R", "INNER"]
        for i in self.leaves:
            if leaf_kind(self.nodes[i].shape, self.shape) == "bcast" and not self._flat_leaf(i):
                params += [f"s{i}_{d}" for d in varying_dims(self.nodes[i].shape, self.shape)]
        params += [f"D{d}: tl.constexpr" for d in range(len(self.shape))]
        return params + ["ROWS: tl.constexpr", "BLOCK_R: tl.constexpr"]

    def _shape_call(self, lines: list[str], call: list[str]) -> list[str]:
        """The launch arguments matching `_shape_params` (stride lines go to `lines`)."""
        shape = self.shape
        red = self.row_length()
        inner = self.inner()
        lines.append(f"kh_shape = {tuple(shape)!r}")
        call = call + [f"{math.prod(shape) // red}", f"{red}", f"{inner}"]
        for i in self.leaves:
            if self._flat_leaf(i):
                lines.append(f"kh_t{i} = kh_t{i}.contiguous()")  # read at the flat index
            elif leaf_kind(self.nodes[i].shape, shape) == "bcast":
                lines.append(f"kh_st{i} = kh_t{i}.expand(kh_shape).stride()")
                call += [f"kh_st{i}[{d}]" for d in varying_dims(self.nodes[i].shape, shape)]
        return call + [f"{s}" for s in shape]

    def inner(self) -> int:
        return math.prod(self.shape[self.d1 + 1:])

    # coordinates ----------------------------------------------------------------------
    def _group(self, which):
        rank = len(self.shape)
        return {"outer": range(0, self.d0), "red": range(self.d0, self.d1 + 1),
                "inner": range(self.d1 + 1, rank)}[which]

    def _needs_group(self, which) -> bool:
        group = set(self._group(which))
        return any(leaf_kind(self.nodes[i].shape, self.shape) == "bcast"
                   and not self._flat_leaf(i)
                   and group & set(varying_dims(self.nodes[i].shape, self.shape))
                   for i in self.leaves)

    def _flat_leaf(self, i: int) -> bool:
        """A split row's broadcast operand that varies over exactly the reduced dims (e.g.
        LayerNorm's weight): a contiguous copy is indexed by the column itself, so it loads
        as a vector instead of through per-dim coordinates and strides."""
        if not self.split or self.inner() != 1 or \
                leaf_kind(self.nodes[i].shape, self.shape) != "bcast":
            return False
        reduced = [d for d in self._group("red") if self.shape[d] != 1]
        return varying_dims(self.nodes[i].shape, self.shape) == reduced

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
        if self._flat_leaf(i):
            return f"tl.load(in{i}_ptr + {cols}, mask={mask}, other=0.0).to(tl.float32)"
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
        """One loop over the row per group of reductions (``looped``: one per reduction;
        ``online``: independent reductions share a pass and softmax's max and sum run as
        one online pass), then the output pass (``online``: last chunk first, so the chunks
        read most recently are still in L2)."""
        online = self.p.get("variant") == "online"
        names: dict[int, str] = {}
        groups = self._reduction_groups(online)
        for i in self.ids:
            node = self.nodes[i]
            if node.op in REDUCTIONS and i not in names:
                group = next(g for g in groups if i in g)
                self._emit_row_deps(b, group, names)
                self._reduction_pass(b, group, names)
            elif self.level[i] == "row" and i not in self.leaves and i not in names:
                b.append(f"r{i} = " + pointwise(node, [operand(a, names)
                                                       for a in node.operands]))
                names[i] = f"r{i}"
        if self.level[self.out_id] == "full":
            if online:
                b.append("n_chunks = tl.cdiv(R, BLOCK_R)")
                b.append("for it in range(0, n_chunks):")
                inner = ["start = (n_chunks - 1 - it) * BLOCK_R"]
            else:
                b.append("for start in range(0, R, BLOCK_R):")
                inner = []
            inner += ["cols = start + tl.arange(0, BLOCK_R)[None, :]",
                      "mask = row_mask & (cols < R)"]
            self._store(inner, names, "cols", "mask")
            b.extend("    " + line for line in inner)
        else:
            self._store(b, names, "cols", "mask")

    # grouping reductions into passes ---------------------------------------------------
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

    def row_length(self) -> int:
        return math.prod(self.shape[self.d0: self.d1 + 1])

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
                b.append(_accumulator_result(i, self.nodes[i].op))
        for i in group:
            names[i] = f"r{i}"

    def _pass_loop(self, b, group: list[int], names: dict, head: str, end: str,
                   lanes: bool = False) -> "_Pairs":
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
                b.extend(_accumulator_init(i, self.nodes[i].op))
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
                loop += _online_step(i, p, local[src])
            elif kind == "moments":
                loop += _lane_moments_step(i, local[src]) if lanes else \
                    _moments_step(i, local[src])
            else:
                loop += _accumulator_step(i, self.nodes[i].op, local[src])
        b.extend("    " + line for line in loop)
        return paired

    # split rows: a row over several programs -------------------------------------------
    def split_slots(self) -> dict[tuple[int, str], int]:
        """Workspace slots of the per-program partial results, per (reduction, field); a
        pair's fields belong to its second reduction."""
        slots: dict[tuple[int, str], int] = {}
        for group in self._reduction_groups(True):
            for i, kind, _ in self._group_pairs(group).leaders(group):
                for name in {"online": ["m", "s"], "moments": ["cnt", "mu", "m2"]}.get(
                        kind, ["v"]):
                    slots[(i, name)] = len(slots)
        return slots

    def _group_pairs(self, group: list[int]) -> "_Pairs":
        paired = _Pairs()
        for i in group:
            pair = self.partner(i)
            if pair is not None and pair[1] in group:
                paired[i] = pair
                paired.values_partners.add(pair[1])
        return paired

    def split_kernels(self) -> list[Kernel]:
        groups = self._reduction_groups(True)
        slots = self.split_slots()
        wide = ".to(tl.int64)" if math.prod(self.shape) >= 2 ** 31 else ""  # 32-bit offsets
        kernels = []
        for g in range(len(groups) + 1):
            k = Kernel(f"{self.name}_pass{g}" if g < len(groups) else self.name)
            k.params += ["out_ptr"] + [f"in{i}_ptr" for i in self.leaves] + ["ws_ptr"]
            k.params += self._shape_params()
            k.params += ["SPLIT: tl.constexpr", "SPLIT_P2: tl.constexpr", "SEG: tl.constexpr"]
            b = k.body
            if g % 2:  # every other kernel runs its programs in reverse: it starts on the
                # data the kernel before it read last, still in L2
                b += ["row_id = n_rows - 1 - tl.program_id(0)",
                      "part = SPLIT - 1 - tl.program_id(1)"]
            else:
                b += ["row_id = tl.program_id(0)", "part = tl.program_id(1)"]
            b += ["rows = row_id + tl.arange(0, ROWS)[:, None]", "row_mask = rows < n_rows",
                  "outer = rows // INNER", "inner = rows % INNER",
                  f"base = outer{wide} * R * INNER + inner", "seg_lo = part * SEG",
                  "seg_hi = tl.minimum(seg_lo + SEG, R)"]
            if any(self._needs_group(w) for w in ("outer", "inner")):
                b.extend(self._coords("outer"))
                b.extend(self._coords("inner"))
            names: dict[int, str] = {}
            if g:
                b += ["pp = tl.arange(0, SPLIT_P2)", "pm = pp < SPLIT",
                      "ws_row = ws_ptr + row_id * SPLIT + pp"]
            for done in groups[:g]:
                self._combine_partials(b, done, slots, names)
            if g < len(groups):
                self._emit_row_deps(b, groups[g], names)
                paired = self._pass_loop(b, groups[g], names,
                                         "for start in range(seg_lo, seg_hi, BLOCK_R):",
                                         "seg_hi", lanes=True)
                self._store_partials(b, groups[g], paired, slots)
            else:
                b.append("for start in range(seg_lo, seg_hi, BLOCK_R):")
                inner = ["cols = start + tl.arange(0, BLOCK_R)[None, :]",
                         "mask = row_mask & (cols < seg_hi)"]
                self._store(inner, names, "cols", "mask")
                b.extend("    " + line for line in inner)
            kernels.append(k)
        return kernels

    def _store_partials(self, b, group, paired, slots) -> None:
        def put(i, field_name, value):
            b.append(f"tl.store(ws_ptr + {slots[(i, field_name)]} * n_rows * SPLIT "
                     f"+ row_id * SPLIT + part, {value})")
        for i, kind, p in paired.leaders(group):
            if kind == "online":
                b.append(f"pm{i} = tl.max(acc{p})")
                b.append(f"ps{i} = tl.sum(acc{i} * tl.exp(acc{p} - tl.where(pm{i} == {NEG_INF}, "
                         f"0.0, pm{i})))")
                put(i, "m", f"pm{i}")
                put(i, "s", f"ps{i}")
            elif kind == "moments":
                b += _lane_moments_merge(i)
                for v in ("cnt", "mu", "m2"):
                    put(i, v, f"w{v}{i}")
            else:
                op = self.nodes[i].op
                put(i, "v", f"tl.{op}(acc{i})")

    def _combine_partials(self, b, group, slots, names) -> None:
        def get(i, field_name, fill="0.0"):
            return (f"tl.load(ws_row + {slots[(i, field_name)]} * n_rows * SPLIT, mask=pm, "
                    f"other={fill})")
        paired = self._group_pairs(group)
        for i, kind, p in paired.leaders(group):
            if kind == "online":
                b += [f"qm{i} = {get(i, 'm', NEG_INF)}", f"r{p} = tl.max(qm{i})",
                      f"r{i} = tl.sum({get(i, 's')} * tl.exp(qm{i} - r{p}))"]
            elif kind == "moments":
                b += [f"qn{i} = {get(i, 'cnt')}", f"qmu{i} = {get(i, 'mu')}",
                      f"qcnt{i} = tl.sum(qn{i})", f"r{p} = tl.sum(qn{i} * qmu{i})",
                      f"qmean{i} = r{p} / qcnt{i}",
                      f"r{i} = tl.sum({get(i, 'm2')}) + tl.sum(qn{i} * (qmu{i} - qmean{i}) "
                      f"* (qmu{i} - qmean{i}))"]
            else:
                op = self.nodes[i].op
                fill = {"sum": "0.0", "max": NEG_INF, "min": POS_INF}[op]
                b.append(f"r{i} = tl.{op}({get(i, 'v', fill)})")
            names[i] = f"r{i}"
            if p is not None:
                names[p] = f"r{p}"

    def split_launch(self, out_var: str, launch_prefix: list[str]) -> list[str]:
        split, block = self.p["SPLIT"], self.p["BLOCK_R"]
        seg = -(-(-(-self.row_length() // split)) // block) * block
        n_rows = math.prod(self.shape) // self.row_length()
        lines = list(launch_prefix)
        lines.append(f"kh_ws = torch.empty(({max(1, len(self.split_slots()))}, {n_rows}, "
                     f"{split}), device={out_var}.device, dtype=torch.float32)")
        call = self._shape_call(lines, [out_var] + [f"kh_t{i}" for i in self.leaves]
                                + ["kh_ws"])
        consts = (f"ROWS=1, BLOCK_R={block}, SPLIT={split}, "
                  f"SPLIT_P2={max(2, 1 << (split - 1).bit_length())}, SEG={seg}, "
                  f"num_warps={self.p['num_warps']})")
        for kernel in self.split_kernels():
            lines.append(f"{kernel.name}[({n_rows}, {split})](" + ", ".join(call) + ", "
                         + consts)
        return lines

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
        lines = list(launch_prefix)
        call = self._shape_call(lines, [out_var] + [f"kh_t{i}" for i in self.leaves])
        rows = self.p.get("ROWS", 1)
        n_rows = math.prod(self.shape) // self.row_length()
        lines.append(f"kh_grid = (triton.cdiv({n_rows}, {rows}),)")
        lines.append(f"{self.name}[kh_grid](" + ", ".join(call) +
                     f", ROWS={rows}, BLOCK_R={self.p['BLOCK_R']}, "
                     f"num_warps={self.p['num_warps']})")
        return lines


class _Pairs(dict):
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


def _reduce_block(op: str, x: str, mask: str) -> str:
    if op == "sum":
        return f"tl.sum(tl.where({mask}, {x}, 0.0), axis=1)[:, None]"
    if op in ("max", "argmax"):
        return f"tl.{op}(tl.where({mask}, {x}, {NEG_INF}), axis=1)[:, None]"
    return f"tl.{op}(tl.where({mask}, {x}, {POS_INF}), axis=1)[:, None]"


def _accumulator_init(i: int, op: str) -> list[str]:
    init = {"sum": "tl.zeros([ROWS, BLOCK_R], dtype=tl.float32)",
            "max": f"tl.full([ROWS, BLOCK_R], {NEG_INF}, tl.float32)",
            "min": f"tl.full([ROWS, BLOCK_R], {POS_INF}, tl.float32)"}
    if op in init:
        return [f"acc{i} = {init[op]}"]
    fill = NEG_INF if op == "argmax" else POS_INF
    return [f"best{i} = tl.full([ROWS, 1], {fill}, tl.float32)",
            f"idx{i} = tl.zeros([ROWS, 1], dtype=tl.int32)"]


def _accumulator_step(i: int, op: str, x: str) -> list[str]:
    if op == "sum":
        return [f"acc{i} += tl.where(mask, {x}, 0.0)"]
    if op in ("max", "min"):
        fn, fill = ("tl.maximum", NEG_INF) if op == "max" else ("tl.minimum", POS_INF)
        return [f"acc{i} = {fn}(acc{i}, tl.where(mask, {x}, {fill}))"]
    fill, red, cmp = (NEG_INF, "tl.max", ">") if op == "argmax" else (POS_INF, "tl.min", "<")
    return [f"m{i} = tl.where(mask, {x}, {fill})",
            f"cm{i} = {red}(m{i}, axis=1)[:, None]",
            f"ci{i} = tl.{op}(m{i}, axis=1)[:, None] + start",
            f"take{i} = cm{i} {cmp} best{i}",
            f"best{i} = tl.where(take{i}, cm{i}, best{i})",
            f"idx{i} = tl.where(take{i}, ci{i}, idx{i})"]


def _accumulator_result(i: int, op: str) -> str:
    if op in ("sum", "max", "min"):
        return f"r{i} = tl.{op}(acc{i}, axis=1)[:, None]"
    return f"r{i} = idx{i}"


def _online_step(s: int, m: int, x: str) -> list[str]:
    """Online softmax: a running max per lane and the sum rescaled when the max grows
    (lanes still at -inf contribute 0, never NaN)."""
    return [f"xm{s} = tl.where(mask, {x}, {NEG_INF})",
            f"mnew{s} = tl.maximum(acc{m}, xm{s})",
            f"msafe{s} = tl.where(mnew{s} == {NEG_INF}, 0.0, mnew{s})",
            f"acc{s} = acc{s} * tl.exp(acc{m} - msafe{s}) + tl.exp(xm{s} - msafe{s})",
            f"acc{m} = mnew{s}"]



def _moments_step(i: int, x: str) -> list[str]:
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


def _lane_moments_step(i: int, x: str) -> list[str]:
    """Per lane: the count and the sums of x - shift and its square, the shift being the
    lane's first value (so the sums stay small and E[d^2] - E[d]^2 does not cancel)."""
    return [f"sh{i} = tl.where(start == seg_lo, {x}, sh{i})",
            f"d{i} = tl.where(mask, {x} - sh{i}, 0.0)",
            f"cnt{i} += mask.to(tl.float32)",
            f"s1{i} += d{i}",
            f"s2{i} += d{i} * d{i}"]


def _lane_moments_merge(i: int) -> list[str]:
    """A program's count, mean and squared deviations from its lanes (Chan): `wcnt`, `wmu`,
    `wm2`. Lanes that saw nothing carry weight 0 (their shift may be anything)."""
    return [f"ln{i} = tl.maximum(cnt{i}, 1.0)",
            f"lmu{i} = tl.where(cnt{i} > 0, sh{i} + s1{i} / ln{i}, 0.0)",
            f"lm2{i} = s2{i} - s1{i} * (s1{i} / ln{i})",
            f"wcnt{i} = tl.sum(cnt{i})",
            f"wmu{i} = tl.sum(cnt{i} * lmu{i}) / tl.maximum(wcnt{i}, 1.0)",
            f"ld{i} = tl.where(cnt{i} > 0, lmu{i} - wmu{i}, 0.0)",
            f"wm2{i} = tl.sum(lm2{i}) + tl.sum(cnt{i} * ld{i} * ld{i})"]


def splittable(an: Analysis) -> bool:
    """A row can be split over programs when the output is per element (not a reduced
    value) and no reduction needs an index (argmax/argmin)."""
    ids = sorted(an.nodes)
    writer = RowsWriter(an, ids, an.output, "probe", {})
    return writer.level[an.output] == "full" and not any(
        an.nodes[i].op in ("argmax", "argmin") for i in ids)


def render(an: Analysis, params, name="fused_rows_kernel", out_var="kh_out",
                 extra_prefix=None, dtype=None):
    ids = sorted(an.nodes)
    p = {k: params[k] for k in ("variant", "ROWS", "BLOCK_R", "num_warps", "SPLIT")
         if k in params}
    writer = RowsWriter(an, ids, an.output, name, p)
    prefix = list(extra_prefix or []) + codegen.leaf_prefix(an, ids, an.row_shape)
    out_shape = tuple(an.nodes[an.output].shape)
    prefix.append(f"{out_var} = torch.empty({out_shape!r}, device={codegen.device_expr(an)}, "
                  f"dtype={dtype or an.output_dtype})")
    if p["variant"] == "split":
        return writer.split_kernels(), writer.split_launch(out_var, prefix) + [
            f"return {out_var}"]
    return [writer.kernel()], writer.launch(out_var, prefix) + [f"return {out_var}"]
