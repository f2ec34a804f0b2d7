"""The rows family's ``coop`` variant (`rows.py`): a long row read from memory once.

Like ``split``, each row is shared by ``SPLIT`` programs, but in ONE persistent kernel: a
program keeps its segment of the row (``BLOCK_R`` elements) in registers, publishes its
partial results of a pass to a small fp32 workspace, counts itself in on a per-row, per-pass
counter and waits until its siblings have too; it then combines the partials from the
workspace and goes on to the next pass or writes its segment. The input is read once and the
output written once (the copy floor), where ``split`` and ``online`` read it twice. While it
waits on a row's last pass, a program already loads its segment of the next row; with
``COOP_AHEAD`` (one pass only) it also publishes the next row's partials and counts in there
before waiting on the current row, so a row's count-ins land an iteration before its wait.

The programs of a row wait for each other, so all of them must be on the chip at once: the
grid is sized at run time from the compiled kernel's registers and shared memory and the
GPU's SM count (a persistent grid of row groups, each program then taking every
n_groups-th row), and a row's programs are consecutive program ids, which the hardware
dispatches together. A wait that never ends (programs not co-resident after all) gives up
after SPIN_LIMIT polls and the result is wrong, which the evaluator reports, instead of a
hung GPU. The Triton interpreter runs programs one after another, where a program waiting
for its siblings would wait forever: the variant is GPU-only (`spaces.templates`)."""

from __future__ import annotations

import math

from search_engine.synthesis.offline.frontend.ir import LEAVES
from search_engine.synthesis.offline.writers.codegen import (
    NEG_INF, POS_INF, Kernel, an_extra_leaves, leaf_kind, varying_dims,
)

SPIN_LIMIT = 1 << 20  # polls before a program gives up on its siblings (a legit wait is a few)
COOP_LEAF_KINDS = ("full", "scalar")


def coop_applies(an) -> bool:
    """Contiguous rows whose operands are the full tensor, scalars or row-long broadcasts
    (LayerNorm's weight: read once per program); no index reductions (argmax)."""
    shape = tuple(an.row_shape)
    first, last = an.reduce_dims[0], an.reduce_dims[-1]
    if math.prod(shape[last + 1:]) != 1 or any(
            n.op in ("argmax", "argmin") for n in an.nodes.values()):
        return False
    reduced = [d for d in range(first, last + 1) if shape[d] != 1]
    for node in _operands(an):
        kind = leaf_kind(node.shape, shape)
        if kind not in COOP_LEAF_KINDS and not (
                kind == "bcast" and varying_dims(node.shape, shape) == reduced):
            return False
    return True


def _operands(an):
    """The nodes the rows writer loads (`RowsWriter.leaves`)."""
    return [n for i, n in an.nodes.items() if n.op in LEAVES or i in an_extra_leaves(an)]


def full_operands(an) -> int:
    """Operands of the rows' own shape: a coop program holds two segments of each."""
    shape = tuple(an.row_shape)
    return sum(1 for n in _operands(an) if leaf_kind(n.shape, shape) == "full")


class CoopRows:
    """The cooperative kernel and its launch for `rows.RowsWriter` (a mixin): uses its pass
    grouping, loads, stores and the split variant's workspace layout and combine."""

    def coop_kernel(self) -> Kernel:
        groups = self._reduction_groups(True)
        slots = self.split_slots()
        # 64-bit offsets well before 2**31: the prefetch addresses a row past the last
        wide = ".to(tl.int64)" if math.prod(self.shape) >= 2 ** 30 else ""
        full = [i for i in self.leaves if leaf_kind(self.nodes[i].shape, self.shape) == "full"]
        k = Kernel(self.name)
        k.params += ["out_ptr"] + [f"in{i}_ptr" for i in self.leaves]
        k.params += ["ws_ptr", "cnt_ptr", "n_groups"] + self._shape_params()
        k.params += ["SPLIT: tl.constexpr", "SPLIT_P2: tl.constexpr", "SPIN_LIMIT: tl.constexpr"]
        b = k.body
        b += ["pid = tl.program_id(0)", "group = pid // SPLIT",
              "part = pid % SPLIT  # a row's programs are consecutive: dispatched together",
              "seg_lo = part * BLOCK_R", "seg_hi = tl.minimum(seg_lo + BLOCK_R, R)",
              "start = seg_lo", "cols = start + tl.arange(0, BLOCK_R)[None, :]",
              "pp = tl.arange(0, SPLIT_P2)", "pm = pp < SPLIT"]
        names: dict[int, str] = {}
        for i in self.leaves:  # the same for every row: loaded once
            if i not in full:
                b.append(f"x{i} = {self._load(i, 'cols', 'cols < R')}")
                names[i] = f"x{i}"
        b += ["rows = group + tl.arange(0, ROWS)[:, None]", "row_mask = rows < n_rows",
              f"base = rows{wide} * R", "mask = row_mask & (cols < seg_hi)"]
        for i in full:
            b.append(f"x{i} = {self._load(i, 'cols', 'mask')}")
            names[i] = f"x{i}"
        if len(groups) == 1 and self.p.get("COOP_AHEAD"):
            self._coop_ahead(b, groups[0], slots, names, full, wide)
            return k
        b.append("for row_id in range(group, n_rows, n_groups):")
        body = self._row_coords(wide) + ["ws_row = ws_ptr + row_id * SPLIT + pp"]
        row_names = dict(names)
        for g, group in enumerate(groups):
            self._emit_row_deps(body, group, row_names)
            self._tile_partials(body, group, row_names, slots)
            if g == len(groups) - 1:
                body += self._prefetch(full, wide)
            body += self._arrive_and_wait(g)
            if g < len(groups) - 1:
                self._combine_partials(body, group, slots, row_names, volatile=True)
        self._finish_row(body, groups[-1], slots, row_names, full)
        b.extend("    " + line for line in body)
        return k

    def _finish_row(self, body: list[str], group: list[int], slots: dict, names: dict,
                    full: list[int]) -> None:
        """After the row's last wait: its last pass combined, its output stored, and the
        next row's segment (loaded meanwhile) made the current one."""
        self._combine_partials(body, group, slots, names, volatile=True)
        if self.level[self.out_id] == "row":
            self._store_row_value(body, names)
        else:
            self._store(body, names, "cols", "mask")
        body += [f"x{i} = nx{i}" for i in full]

    def _coop_ahead(self, b, group: list[int], slots: dict, names: dict, full: list[int],
                    wide: str) -> None:
        """One pass, published a row ahead: before waiting on its row, a program loads its
        segment of its next row, publishes that row's partials and counts itself in there,
        so the siblings' count-ins for a row land a whole iteration before anyone waits on
        it and the wait is one poll, not the slowest sibling's release and the poll's trips
        (the plain form waits right after its own count-in, every row)."""
        self._emit_row_deps(b, group, names)  # row-invariant here: scalars only (coop_applies)
        b += ["row_id = group"]
        self._tile_partials(b, group, dict(names), slots, guard="row_id < n_rows")
        b += self._arrive(0, guard="row_id < n_rows")
        b.append("for this_row in range(group, n_rows, n_groups):")
        body = ["row_id = this_row + n_groups  # the next row: its segment, partials, count-in"]
        body += self._row_coords(wide)
        body += [f"nx{i} = {self._load(i, 'cols', 'mask')}" for i in full]
        ahead = {**names, **{i: f"nx{i}" for i in full}}
        self._tile_partials(body, group, ahead, slots, guard="row_id < n_rows")
        body += self._arrive(0, guard="row_id < n_rows")
        body += ["row_id = this_row  # this row: its siblings counted in an iteration ago"]
        body += self._row_coords(wide) + ["ws_row = ws_ptr + row_id * SPLIT + pp"]
        body += self._wait(0)
        self._finish_row(body, group, slots, dict(names), full)
        b.extend("    " + line for line in body)

    @staticmethod
    def _row_coords(wide: str) -> list[str]:
        return ["rows = row_id + tl.arange(0, ROWS)[:, None]", "row_mask = rows < n_rows",
                f"base = rows{wide} * R", "mask = row_mask & (cols < seg_hi)"]

    def _tile_partials(self, b, group: list[int], names: dict, slots: dict,
                       guard: str = "") -> None:
        """Each reduction's partial result over this program's segment, straight from the
        register tile (no per-lane accumulators: one tile of each operand is all a program
        holds), stored where the split variant's combine reads them (where `guard` holds:
        a row past the last has no slots)."""
        paired = self._group_pairs(group)
        row = "row_id * SPLIT + part"
        where = f", mask={guard}" if guard else ""

        def put(i, field_name, value):
            b.append(f"tl.store(ws_ptr + {slots[(i, field_name)]} * n_rows * SPLIT + {row}, "
                     f"{value}{where})")
        for i, kind, p in paired.leaders(group):
            src = self.nodes[p].refs()[0] if kind else self.nodes[i].refs()[0]
            names.update(self._emit_full(b, {src}, names, "cols", "mask"))
            x = names[src]
            if kind == "online":
                b += [f"pm{i} = tl.max(tl.where(mask, {x}, {NEG_INF}))",
                      f"ps{i} = tl.sum(tl.where(mask, tl.exp({x} - tl.where(pm{i} == {NEG_INF}, "
                      f"0.0, pm{i})), 0.0))"]
                put(i, "m", f"pm{i}")
                put(i, "s", f"ps{i}")
            elif kind == "moments":  # count, mean and squared deviations (Chan's merge)
                b += [f"pn{i} = tl.sum(mask.to(tl.float32))",
                      f"pmu{i} = tl.sum(tl.where(mask, {x}, 0.0)) / pn{i}",
                      f"pd{i} = tl.where(mask, {x} - pmu{i}, 0.0)",
                      f"pq{i} = tl.sum(pd{i} * pd{i})"]
                put(i, "cnt", f"pn{i}")
                put(i, "mu", f"pmu{i}")
                put(i, "m2", f"pq{i}")
            else:
                op = self.nodes[i].op
                fill = {"sum": "0.0", "max": NEG_INF, "min": POS_INF}[op]
                put(i, "v", f"tl.{op}(tl.where(mask, {x}, {fill}))")

    def _prefetch(self, full: list[int], wide: str) -> list[str]:
        """This program's segment of its next row, loaded before the wait."""
        lines = ["next_rows = rows + n_groups", f"next_base = next_rows{wide} * R",
                 "next_mask = (next_rows < n_rows) & (cols < seg_hi)"]
        for i in full:
            lines.append(f"nx{i} = {self._load(i, 'cols', 'next_mask', 'next_base')}")
        return lines

    @classmethod
    def _arrive_and_wait(cls, g: int) -> list[str]:
        """Count this program in on the row's counter of pass `g` (release: its partials are
        visible first), then poll until every sibling has (acquire)."""
        return cls._arrive(g) + cls._wait(g)

    @staticmethod
    def _arrive(g: int, guard: str = "") -> list[str]:
        where = f", mask={guard}" if guard else ""
        return [f"tl.atomic_add(cnt_ptr + {g} * n_rows + row_id, 1, sem='release'{where})"]

    @staticmethod
    def _wait(g: int) -> list[str]:
        counter = f"cnt_ptr + {g} * n_rows + row_id"
        return [f"seen = tl.atomic_add({counter}, 0, sem='acquire')", "spins = 0",
                "while (seen < SPLIT) & (spins < SPIN_LIMIT):",
                f"    seen = tl.atomic_add({counter}, 0, sem='acquire')",
                "    spins += 1"]

    def coop_passes(self) -> int:
        return len(self._reduction_groups(True))

    def coop_launch(self, out_var: str, launch_prefix: list[str]) -> list[str]:
        """The workspace, the zeroed counters, the co-resident grid and the launch."""
        block, split = self.p["BLOCK_R"], self.p["SPLIT"]
        n_rows = math.prod(self.shape) // self.row_length()
        lines = list(launch_prefix)
        lines.append(f"kh_ws = torch.empty(({max(1, len(self.split_slots()))}, {n_rows}, "
                     f"{split}), device={out_var}.device, dtype=torch.float32)")
        lines.append(f"kh_cnt = torch.zeros(({self.coop_passes()}, {n_rows}), "
                     f"device={out_var}.device, dtype=torch.int32)")
        call = self._shape_call(lines, [out_var] + [f"kh_t{i}" for i in self.leaves]
                                + ["kh_ws", "kh_cnt", "KH_GROUPS"])
        args = ", ".join(call)
        consts = (f"ROWS=1, BLOCK_R={block}, SPLIT={split}, "
                  f"SPLIT_P2={max(2, 1 << (split - 1).bit_length())}, "
                  f"SPIN_LIMIT={SPIN_LIMIT}, num_warps={self.p['num_warps']}")
        lines += [f"kh_groups = kh_coop_groups({self.name}, "
                  f"({args.replace('KH_GROUPS', '1')},), dict({consts}), {split}, {n_rows})",
                  f"{self.name}[(kh_groups * {split},)]({args.replace('KH_GROUPS', 'kh_groups')}, "
                  f"{consts})"]
        return lines


class CoopGroups(Kernel):
    """The module-level host function the coop launch sizes its grid with."""

    def __init__(self):
        super().__init__("kh_coop_groups")

    def source(self) -> str:
        return COOP_GROUPS_SOURCE


COOP_GROUPS_SOURCE = '''def kh_coop_groups(kernel, args, consts, split, n_rows):
    """Row groups whose programs are all on the chip at once (a row's programs wait for
    each other): from the compiled kernel's registers and shared memory and the SM count."""
    compiled = kernel.warmup(*args, grid=(1,), **consts)
    compiled.run  # loads the binary: its register count is known from here
    props = torch.cuda.get_device_properties(args[0].device)
    warps = consts["num_warps"]
    regs = -(-max(compiled.n_regs, 1) * 32 // 256) * 256 * warps
    per_sm = min(props.regs_per_multiprocessor // regs,
                 props.max_threads_per_multi_processor // (32 * warps))
    if compiled.metadata.shared:
        per_sm = min(per_sm, props.shared_memory_per_multiprocessor // compiled.metadata.shared)
    groups = min(n_rows, props.multi_processor_count * per_sm // split)
    if groups < 1:
        raise RuntimeError(f"a row's {split} programs do not fit on this GPU at once: "
                           f"use longer segments (BLOCK_R)")
    return groups
'''


MAX_THREADS_PER_SM = 2048  # Hopper and Ampere: the most a row's programs can ever share
REGISTERS_PER_SM, MAX_REGISTERS_PER_THREAD = 65536, 255  # Hopper and Ampere


def coop_resource_problem(target, params: dict, registers: int = 0) -> str:
    """Why the cooperative variant cannot run on `target`, or '': a row's programs must all
    be on the chip at once, bounded by threads and by `registers` a thread (an estimate;
    `kh_coop_groups` sizes the grid from the compiled kernel's own count at run time)."""
    if target.is_interpreter:
        return ("the coop variant's programs wait for each other, and the interpreter runs "
                "programs one at a time: GPU only")
    threads = 32 * params["num_warps"]
    per_sm = MAX_THREADS_PER_SM // threads
    if registers:
        per_sm = min(per_sm, REGISTERS_PER_SM // (min(registers, MAX_REGISTERS_PER_THREAD)
                                                  * threads))
    most = target.multiprocessors * per_sm
    if params["SPLIT"] > most:
        held = f" at about {registers} registers a thread" if registers else ""
        return (f"a row's {params['SPLIT']} coop programs cannot all be on the chip at once "
                f"(at most {most} of {params['num_warps']} warps{held}): longer segments")
    return ""
