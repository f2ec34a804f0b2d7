"""The plan as data: which kernels a problem becomes, what each computes and fuses, the layout
choices the plan makes, or which ops are refused and why (what `coverage` prints and the
problem page shows).

Read off the decisions the writers render, never classified a second time: the family
(`classify.py`), the GEMM's fused part and rows tail (`gemm_epilogue.py`: ``an._fused``,
``an._rows_tail``) and the staged pipeline's stages (`stages.plan`, with the output view that
drops its last stage and the kernel names the staged writer gives). One group is one kernel
the candidate launches, in launch order, at the family's default parameters. A split
parameter adds kernels to a group: the rows ``split`` variant and a staged ``SPLIT_R`` launch
partial passes before the group's kernel (named after it: ``_pass0``, ``_partial``), and
``SPLIT_K`` > 1 finishes the GEMM's epilogue in ``epilogue_kernel`` right after it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from search_engine.synthesis.base import NotCoveredError
from search_engine.synthesis.offline.frontend.ir import LEAVES, REDUCTIONS, Analysis
from search_engine.synthesis.offline.plan.stages import (
    REDUCE_OPS, STRIDED_OPERAND_DOTS, VIEW_OPS, Stage, moments_kernel_name,
    output_view_of, plan, row_group_kernel_name, shared_kernels, stage_kernel_name,
    stage_writer_op, streams_rows,
)

# the kernels the fused writers define (they take their names from here)
ELEMENTWISE_KERNEL = "fused_elementwise_kernel"
ROWS_KERNEL = "fused_rows_kernel"
MATMUL_KERNEL = "matmul_kernel"

STAGE_PATTERNS = {"conv": "convolution + epilogue", "pool": "pooling", "scan": "scan",
                  "recurrence": "recurrence",
                  "matmul": "gemm + epilogue", "attention": "attention"}
DOT_OPS = ("conv", "matmul", "attention")


@dataclass
class KernelGroup:
    kernel: str  # the @triton.jit function the candidate launches for it
    pattern: str  # pointwise | row reduction | reduction | gemm + epilogue | ...
    ops: list[str]  # every op it computes, in graph order
    epilogue: list[str] = field(default_factory=list)  # ops fused after its anchor
    layout: list[str] = field(default_factory=list)
    stores: str = "the output"


@dataclass
class KernelPlan:
    family: str | None
    kernels: list[KernelGroup] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # plan-wide layout decisions
    refused_ops: list[str] = field(default_factory=list)
    reason: str = ""  # why it is refused ("" when covered)

    @property
    def covered(self) -> bool:
        return self.family is not None

    @property
    def pattern(self) -> str | None:
        if not self.kernels:
            return None
        return self.kernels[0].pattern if len(self.kernels) == 1 else "multi-stage"

    def to_dict(self) -> dict[str, Any]:
        return {"covered": self.covered, "family": self.family, "pattern": self.pattern,
                "kernels": [asdict(k) for k in self.kernels], "notes": list(self.notes),
                "refused": None if self.covered else {"ops": list(self.refused_ops),
                                                      "reason": self.reason}}


def plan_lines(plan: dict[str, Any]) -> list[str]:
    """A plan's JSON form (`KernelPlan.to_dict`) as text, one kernel a line, or its refusal."""
    if not plan["covered"]:
        refused = plan["refused"]
        ops = f" (ops: {', '.join(refused['ops'])})" if refused["ops"] else ""
        return [f"refused: {refused['reason']}{ops}"]
    lines = []
    for k, group in enumerate(plan["kernels"]):
        fused = f"; fused epilogue: {', '.join(group['epilogue'])}" if group["epilogue"] else ""
        layout = f"; layout: {'; '.join(group['layout'])}" if group["layout"] else ""
        lines.append(f"kernel {k} {group['kernel']} [{group['pattern']}]: "
                     f"{' → '.join(group['ops'])}{fused}{layout}")
    return lines + [f"note: {note}" for note in plan["notes"]]


def refused_plan(exc: NotCoveredError) -> KernelPlan:
    return KernelPlan(None, refused_ops=list(exc.ops), reason=str(exc))


def kernel_plan(an: Analysis) -> KernelPlan:
    """The plan of a planned analysis (`gemm_epilogue.planned`)."""
    if an.family == "elementwise":
        return KernelPlan(an.family, [KernelGroup(ELEMENTWISE_KERNEL, "pointwise",
                                                  _ops(an, an.nodes))])
    if an.family == "rows":
        return KernelPlan(an.family, [_rows_group(an)])
    if an.family == "matmul":
        return _matmul_plan(an)
    return _staged_plan(an)


def _ops(an: Analysis, ids) -> list[str]:
    return [an.nodes[i].op for i in sorted(ids) if an.nodes[i].op not in LEAVES]


def _rows_group(an: Analysis, layout: list[str] | None = None) -> KernelGroup:
    after = set()  # ops over a reduced value: the row kernel's epilogue
    for node in an.topo():
        if any(r in after or an.nodes[r].op in REDUCTIONS for r in node.refs()):
            after.add(node.id)
    epilogue = [an.nodes[i].op for i in sorted(after) if an.nodes[i].op not in REDUCTIONS]
    row = f"rows of {list(an.row_shape)} reduced over dims {list(an.reduce_dims)}"
    return KernelGroup(ROWS_KERNEL, "row reduction", _ops(an, an.nodes), epilogue,
                       [row] + (layout or []))


def _matmul_plan(an: Analysis) -> KernelPlan:
    mm = an.nodes[an.matmul]
    fused = [i for i in an._fused if an.nodes[i].op not in LEAVES]
    epilogue = [an.nodes[i].op for i in fused if i != an.matmul and an.nodes[i].op != "transpose"]
    a_shape, b_shape = (an.nodes[r].shape for r in mm.refs())
    layout = []
    if len(b_shape) == 3:
        layout.append(f"batched over {b_shape[0]} matrices")
    elif len(a_shape) > 2:
        layout.append(f"A's leading dims {list(a_shape[:-1])} flattened into M rows")
    for name, ref in zip("AB", mm.refs()):
        if an.nodes[ref].op == "transpose":
            layout.append(f"{name} read transposed through its strides (no copy)")
    tail = an._rows_tail
    gemm = KernelGroup(MATMUL_KERNEL, "gemm + epilogue", ["matmul"] + epilogue, epilogue, layout,
                       "the output" if tail is None else "an fp32 buffer the rows tail reads")
    if tail is None:
        return KernelPlan(an.family, [gemm])
    reads = f"reads the GEMM's fp32 result (node {an._split}) as its input"
    return KernelPlan(an.family, [gemm, _rows_group(tail, [reads])])


def _staged_plan(an: Analysis) -> KernelPlan:
    stages = plan(an)
    stored = {s.sink for s in stages}
    notes = []
    if any(n.attrs.get("column_sums") for n in an.nodes.values()):
        notes.append("a sum or a window average over a GEMM's output columns, or a sum over "
                     "a convolution's output channels, is computed from the weight's summed "
                     "columns or filters (exact up to rounding order): no full GEMM or "
                     "convolution runs")
    viewed = output_view_of(an, stages)
    if viewed is not None:
        stages = stages[:-1]
        notes.append(f"the output is a view (reshape) of kernel {len(stages) - 1}'s result; "
                     f"no kernel copies it")
    groups, pairs, grouped = shared_kernels(an, stages)
    kernels = [_row_group(an, k, [stages[j] for j in groups[k]], stored, viewed)
               if k in groups else
               _moments_group(an, k, [stage, stages[pairs[k]]], stored) if k in pairs else
               _stage_group(an, k, stage, stored, viewed)
               for k, stage in enumerate(stages) if k not in grouped]
    return KernelPlan(an.family, kernels, notes)


def _moments_group(an: Analysis, k: int, members: list[Stage], stored: set[int]) -> KernelGroup:
    """A mean and the variance around it (`stages.moment_pairs`): one kernel, one read."""
    computed = set().union(*(_computed(an, s.sink, stored) for s in members))
    layout = ["the mean and the squared deviations from it in one read of the elements "
              "(Welford per lane, Chan's merge across lanes and split programs)"]
    return KernelGroup(moments_kernel_name(k), "reduction", _ops(an, computed),
                       [an.nodes[i].op for s in members for i in s.epilogue], layout,
                       "fp32 buffers later kernels read")


def _row_group(an: Analysis, k: int, members: list[Stage], stored: set[int],
               viewed: int | None) -> KernelGroup:
    """Stages that share their rows (`stages.row_groups`): one kernel."""
    computed = set().union(*(_computed(an, s.sink, stored) for s in members))
    reads = an.nodes[an.nodes[members[0].anchor].refs()[0]].op
    how = "streamed once per stage by one program (re-read from L2)" \
        if streams_rows(an, members[0]) else "read once, each row one tile"
    layout = [f"{len(members)} stages in one kernel over the same rows ({reads}): {how}"]
    sinks = {s.sink for s in members}
    stores = "the output" if sinks & {an.output, viewed} else \
        "fp32 buffers later kernels read"
    return KernelGroup(row_group_kernel_name(k), "row reduction", _ops(an, computed),
                       [an.nodes[i].op for s in members for i in s.epilogue], layout, stores)


def _stage_group(an: Analysis, k: int, stage: Stage, stored: set[int],
                 viewed: int | None) -> KernelGroup:
    anchor, writer_op = an.nodes[stage.anchor], stage_writer_op(an, stage)
    pattern = STAGE_PATTERNS.get(writer_op, "reduction" if writer_op in REDUCE_OPS else "pointwise")
    layout = []
    if anchor.op in DOT_OPS:
        layout += [f"operand {an.nodes[r].op} read as a strided view (no copy)"
                   for r in anchor.refs() if r not in stored and (an.nodes[r].op in VIEW_OPS or (
                       an.nodes[r].op == "slice" and anchor.op in STRIDED_OPERAND_DOTS))]
    if stage.pool is not None:
        layout.append("pooling fused: a program's rows are whole pool windows, reduced in "
                      "registers before the one store (the conv's output is never written)")
    readers = {n.op for n in an.nodes.values() if stage.anchor in n.refs()}
    if pattern == "pointwise" and stage.sink != an.output and readers & set(DOT_OPS):
        layout.append("stored first: an operand a later dot kernel reads")
    stores = "the output" if stage.sink in (an.output, viewed) else \
        "an fp32 buffer a later kernel reads"
    return KernelGroup(stage_kernel_name(k, an, stage), pattern,
                       _ops(an, _computed(an, stage.sink, stored)),
                       [an.nodes[i].op for i in stage.epilogue], layout, stores)


def _computed(an: Analysis, sink: int, stored: set[int]) -> set[int]:
    """The nodes a stage's kernel computes: its sink and what it reads that no kernel stored
    (pointwise and index ops are computed where they are read)."""
    seen, stack = set(), [sink]
    while stack:
        i = stack.pop()
        if i in seen or (i in stored and i != sink):
            continue
        seen.add(i)
        stack.extend(an.nodes[i].refs())
    return seen
