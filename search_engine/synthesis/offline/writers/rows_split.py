"""The rows family's ``split`` variant (`rows.py`): each row spread over ``SPLIT`` programs.

One kernel per pass of reductions: each program streams its segment of the row, keeps
per-lane accumulators and writes its partial results to a small fp32 workspace; the next
kernel combines the partials of the passes before it (a mean and variance pair with Chan's
formula) and goes on; the last kernel writes the output. Every other kernel runs its programs
in reverse, so it starts on the data the kernel before it read last (still in L2)."""

from __future__ import annotations

import math

from search_engine.synthesis.offline.writers.codegen import (
    NEG_INF, POS_INF, Kernel, operand, pointwise,
)
from search_engine.synthesis.offline.writers.rows_accumulators import lane_moments_merge


class SplitRows:
    """Split-row kernels and their launch for `rows.RowsWriter` (a mixin): uses its pass
    grouping (`rows_passes.ReductionPasses`), shapes, coordinates and stores."""

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
            elif self.level[self.out_id] == "row":
                self._store_row_value(b, names)
            else:
                b.append("for start in range(seg_lo, seg_hi, BLOCK_R):")
                inner = ["cols = start + tl.arange(0, BLOCK_R)[None, :]",
                         "mask = row_mask & (cols < seg_hi)"]
                self._store(inner, names, "cols", "mask")
                b.extend("    " + line for line in inner)
            kernels.append(k)
        return kernels

    def _store_row_value(self, b, names) -> None:
        """A reduced output (a full reduction such as MSELoss's mean): the combined partials
        give the row's value in every program of the row; the first one stores it."""
        out = self.out_id
        if out not in names:
            self._emit_row_deps(b, [out], names)
            node = self.nodes[out]
            b.append(f"r{out} = " + pointwise(node, [operand(a, names) for a in node.operands]))
            names[out] = f"r{out}"
        b.append("if part == 0:")
        b.append(f"    tl.store(out_ptr + rows, {names[out]}.to(out_ptr.dtype.element_ty), "
                 f"mask=row_mask)")

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
                b += lane_moments_merge(i)
                for v in ("cnt", "mu", "m2"):
                    put(i, v, f"w{v}{i}")
            else:
                op = self.nodes[i].op
                put(i, "v", f"tl.{op}(acc{i})")

    def _combine_partials(self, b, group, slots, names, volatile: bool = False) -> None:
        """The group's results from every program's partials; `volatile` when siblings of
        the same kernel wrote them (the coop variant: no stale cached copy may be read)."""
        fresh = "volatile=True, " if volatile else ""

        def get(i, field_name, fill="0.0"):
            return (f"tl.load(ws_row + {slots[(i, field_name)]} * n_rows * SPLIT, mask=pm, "
                    f"{fresh}other={fill})")
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
