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
Chan's formula. ``coop`` (`rows_coop.py`, GPU only) shares a row between co-resident
programs of ONE persistent kernel that keep their segments in registers and exchange
partials through the workspace and a per-row counter: one read, one write. Broadcast
operands spanning the whole row (LayerNorm's weight and bias) are read at the row's flat
index, so they load as contiguous vectors.

Strided rows (a reduction over a middle dim, e.g. RMSNorm over channels) take many
neighbouring rows per program, addressed so their loads coalesce.

The writer (`RowsWriter`) is split by responsibility: this module holds a row's geometry,
coordinates and loads, the ``single``/``looped``/``online`` kernels and the entry points;
`rows_passes.py` groups reductions into passes and writes each pass's loop,
`rows_split.py` the ``split`` variant's kernels, `rows_coop.py` the ``coop`` kernel,
`rows_accumulators.py` the accumulator code.
"""

from __future__ import annotations

import math

from search_engine.synthesis.offline.frontend.ir import LEAVES, REDUCTIONS, Analysis
from search_engine.synthesis.offline.plan.kernel_plan import ROWS_KERNEL
from search_engine.synthesis.offline.writers import codegen
from search_engine.synthesis.offline.writers.codegen import (
    Kernel, an_extra_leaves, leaf_kind, operand, pointwise, unravel, varying_dims,
)
from search_engine.synthesis.offline.writers.rows_accumulators import reduce_block
from search_engine.synthesis.offline.writers.rows_coop import CoopGroups, CoopRows
from search_engine.synthesis.offline.writers.rows_passes import ReductionPasses
from search_engine.synthesis.offline.writers.rows_split import SplitRows


class RowsWriter(ReductionPasses, SplitRows, CoopRows):
    """Writes one rows kernel for the nodes `ids` of `an` (reductions over `an.reduce_dims`)."""

    def __init__(self, an: Analysis, ids: list[int], out_id: int, name: str, params: dict):
        self.an, self.ids, self.out_id, self.name, self.p = an, ids, out_id, name, params
        self.nodes = an.nodes
        self.shape = tuple(an.row_shape)
        self.d0, self.d1 = an.reduce_dims[0], an.reduce_dims[-1]
        self.leaves = [i for i in ids if self.nodes[i].op in LEAVES or i in an_extra_leaves(an)]
        self.level = self._levels()
        self.split = params.get("variant") in ("split", "coop")  # rows over programs

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

    def _load(self, i: int, cols: str, mask: str, base: str = "base") -> str:
        node = self.nodes[i]
        kind = leaf_kind(node.shape, self.shape)
        if kind == "full":
            return f"tl.load(in{i}_ptr + {base} + {cols} * INNER, mask={mask}, other=0.0)" \
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
                b.append(f"r{i} = " + reduce_block(node.op, x, "mask"))
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

    def row_length(self) -> int:
        return math.prod(self.shape[self.d0: self.d1 + 1])

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


def splittable(an: Analysis) -> bool:
    """A row can be split over programs unless a reduction needs an index (argmax/argmin):
    the last kernel combines the partials and writes the output, per element or (a reduced
    output) one value per row."""
    return not any(an.nodes[i].op in ("argmax", "argmin") for i in an.nodes)


def render(an: Analysis, params, name=ROWS_KERNEL, out_var="kh_out",
           extra_prefix=None, dtype=None):
    ids = sorted(an.nodes)
    p = {k: params[k] for k in ("variant", "ROWS", "BLOCK_R", "num_warps", "SPLIT", "COOP_AHEAD")
         if k in params}
    writer = RowsWriter(an, ids, an.output, name, p)
    prefix = list(extra_prefix or []) + codegen.leaf_prefix(an, ids, an.row_shape)
    out_shape = tuple(an.nodes[an.output].shape)
    prefix.append(f"{out_var} = torch.empty({out_shape!r}, device={codegen.device_expr(an)}, "
                  f"dtype={dtype or an.output_dtype})")
    if p["variant"] == "split":
        return writer.split_kernels(), writer.split_launch(out_var, prefix) + [
            f"return {out_var}"]
    if p["variant"] == "coop":
        return [writer.coop_kernel(), CoopGroups()], writer.coop_launch(out_var, prefix) + [
            f"return {out_var}"]
    return [writer.kernel()], writer.launch(out_var, prefix) + [f"return {out_var}"]
