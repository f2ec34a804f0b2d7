"""The staged family's op vocabulary and its plan (rendered by `writers/staged.py`): which
ops are anchors (each gets its own kernel), which are pointwise or index ops (computed where
they are read), and how a graph is cut into stages — an anchor with its fused pointwise
epilogue, dot operands a kernel cannot read with strides, and the output, in topological
order."""

from __future__ import annotations

from dataclasses import dataclass, field

from search_engine.synthesis.offline.frontend.ir import BINARY, LEAVES, UNARY, Analysis, IRNode

REDUCE_OPS = {"sum", "max", "min", "argmax", "argmin", "prod"}
ANCHOR_OPS = {"conv", "pool", "scan", "matmul", "attention"} | REDUCE_OPS
INDEX_OPS = {"reshape", "permute", "transpose", "expand", "flip", "slice", "unfold", "cat",
             "pad"}
VIEW_OPS = ("permute", "transpose", "reshape")  # a dot operand reads these as torch views
COMPARE = {"gt": ">", "lt": "<", "ge": ">=", "le": "<=", "eq": "==", "ne": "!="}
EXTRA_UNARY = {"sign", "floor", "ceil", "round", "trunc", "erf"}
POINTWISE_OPS = UNARY | BINARY | set(COMPARE) | EXTRA_UNARY | {"where", "iota"}


@dataclass
class Stage:
    anchor: int  # the anchor (or the pointwise node) this stage computes
    sink: int  # the node it stores (the anchor, or the end of its fused epilogue)
    epilogue: list[int] = field(default_factory=list)


def users(nodes: dict[int, IRNode]) -> dict[int, list[int]]:
    found: dict[int, list[int]] = {i: [] for i in nodes}
    for node in nodes.values():
        for ref in set(node.refs()):
            found[ref].append(node.id)
    return found


def plan(an: Analysis) -> list[Stage]:
    """The stages in topological order; which nodes are stored."""
    nodes, used_by = an.nodes, users(an.nodes)
    stages, stored = [], set()
    for node in an.topo():
        if node.op not in ANCHOR_OPS:
            continue
        sink, epilogue = node.id, []
        while sink != an.output and len(used_by[sink]) == 1:
            nxt = nodes[used_by[sink][0]]
            if nxt.op not in POINTWISE_OPS or nxt.op == "iota" or \
                    tuple(nxt.shape) != tuple(nodes[sink].shape) or any(
                        _reaches_anchor(nodes, r, stored) for r in nxt.refs() if r != sink):
                break
            sink = nxt.id
            epilogue.append(sink)
        stages.append(Stage(node.id, sink, epilogue))
        stored.add(sink)
    for node in an.topo():  # dot operands computed by pointwise ops are stored first
        if node.op in ("conv", "matmul", "attention"):
            for ref in node.refs():
                if not _plain_operand(nodes, ref, stored):
                    stages.append(Stage(ref, ref))
                    stored.add(ref)
    if an.output not in stored:
        stages.append(Stage(an.output, an.output))
    order = {i: k for k, i in enumerate(sorted(nodes))}
    return sorted(stages, key=lambda s: order[s.anchor])


def output_view_of(an: Analysis, stages: list[Stage]) -> int | None:
    """The stored node whose reshape is the output, when the last stage would only copy it:
    the candidate then returns a view of that node's buffer and launches no kernel for it."""
    last, out = stages[-1], an.nodes[an.output]
    stored = {s.sink for s in stages}
    if last.anchor == an.output and out.op == "reshape" and out.refs()[0] in stored \
            and an.output_dtype == "torch.float32":
        return out.refs()[0]
    return None


def stage_writer_op(an: Analysis, stage: Stage) -> str:
    """The op whose writer writes `stage`: its anchor's, or "pointwise" for a stored
    pointwise node without an epilogue."""
    op = an.nodes[stage.anchor].op
    return op if stage.anchor != stage.sink or op in ANCHOR_OPS else "pointwise"


def stage_kernel_name(k: int, an: Analysis, stage: Stage) -> str:
    """The name of the kernel that computes the k-th stage (after any dropped view stage)."""
    return f"kh_stage{k}_{an.nodes[stage.anchor].op}"


def _reaches_anchor(nodes, ref, stored) -> bool:
    """Whether computing `ref` inline would need an anchor that is not stored yet (an
    epilogue may read only leaves, stored nodes and ops over them)."""
    stack, seen = [ref], set()
    while stack:
        i = stack.pop()
        if i in seen or i in stored:
            continue
        seen.add(i)
        if nodes[i].op in ANCHOR_OPS:
            return True
        stack.extend(nodes[i].refs())
    return False


def _plain_operand(nodes, ref, stored) -> bool:
    """A tensor a dot kernel can read with strides: a leaf, a stored node, or a permute /
    transpose / reshape of one (passed as a torch view; broadcast batch dims get stride 0)."""
    node = nodes[ref]
    while node.op in VIEW_OPS and node.id not in stored:
        node = nodes[node.refs()[0]]
    return (node.op in LEAVES and not node.attrs.get("scalar")) or node.id in stored
