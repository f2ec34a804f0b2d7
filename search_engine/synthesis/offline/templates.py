"""The offline templates: parameter spaces, defaults, moves, and rendering to a candidate.

Each family's parameters are the search space; each move (a transformation) changes one or
two parameters and is a step in the tree. Which moves come first depends on the parent's
diagnosis (see `MOVES_BY_DIAGNOSIS`).
"""

from __future__ import annotations

import copy
import math
from typing import Any, Callable

import torch

from search_engine.synthesis.base import NotCoveredError
from search_engine.synthesis.offline import codegen
from search_engine.synthesis.offline.analysis import (
    LEAVES, REDUCTIONS, Analysis, IRNode, check_rows,
)

SPACES: dict[str, dict[str, list]] = {
    "elementwise": {"BLOCK": [256, 512, 1024, 2048, 4096], "num_warps": [1, 2, 4, 8]},
    "rows": {"ROWS": [1, 2, 4, 8, 16], "BLOCK_R": [256, 512, 1024, 2048, 4096, 8192],
             "num_warps": [1, 2, 4, 8, 16]},
    "matmul": {"BLOCK_M": [16, 32, 64, 128], "BLOCK_N": [16, 32, 64, 128, 256],
               "BLOCK_K": [16, 32, 64, 128], "GROUP_M": [1, 4, 8], "num_warps": [2, 4, 8],
               "num_stages": [1, 2, 3, 4, 5], "SPLIT_K": [1, 2, 4, 8]},
}
MAX_SINGLE_ROW_ELEMENTS = 16384  # ROWS * BLOCK_R kept in registers by the single variant


def row_length(an: Analysis) -> int:
    return math.prod(an.row_shape[an.reduce_dims[0]: an.reduce_dims[-1] + 1])


def rows_analysis(an: Analysis) -> Analysis | None:
    """For matmul problems with reductions after the matmul: their row shape."""
    return an if an.family == "rows" else getattr(an, "_rows_tail", None)


def default_params(an: Analysis, target: str, policy: str) -> dict[str, Any]:
    if an.family == "elementwise":
        return {"BLOCK": 1024, "num_warps": 4}
    if an.family == "rows":
        return _default_rows(row_length(an))
    params = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 4,
              "num_stages": 3, "SPLIT_K": 1, "PRECISION": "ieee"}
    if target != "interpreter":
        params.update(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, num_warps=8)
    if policy in ("tf32", "bf16"):
        params["PRECISION"] = "tf32"
    tail = getattr(an, "_rows_tail", None)
    if tail is not None:
        params.update({"tail_" + k: v for k, v in _default_rows(row_length(tail)).items()})
    return clamp(an, params)


def _default_rows(length: int) -> dict[str, Any]:
    block = codegen.next_pow2(length)
    if block <= 8192:
        rows = max(1, min(16, 2048 // block))
        warps = 4 if block * rows <= 4096 else 8
        return {"variant": "single", "ROWS": rows, "BLOCK_R": block, "num_warps": warps}
    return {"variant": "looped", "ROWS": 1, "BLOCK_R": 2048, "num_warps": 8}


def clamp(an: Analysis, params: dict[str, Any]) -> dict[str, Any]:
    """Keep parameters legal for the problem's shapes (tiles not far beyond the dims)."""
    p = dict(params)
    if an.family == "matmul":
        m, n, k = matmul_dims(an)
        p["BLOCK_M"] = min(p["BLOCK_M"], max(16, codegen.next_pow2(m)))
        p["BLOCK_N"] = min(p["BLOCK_N"], max(16, codegen.next_pow2(n)))
        p["BLOCK_K"] = min(p["BLOCK_K"], max(16, codegen.next_pow2(k)))
        while p["SPLIT_K"] > 1 and p["BLOCK_K"] * p["SPLIT_K"] > max(k, 16):
            p["SPLIT_K"] //= 2
    for prefix, tail in (("", an if an.family == "rows" else None),
                         ("tail_", getattr(an, "_rows_tail", None))):
        if tail is None:
            continue
        length = row_length(tail)
        if p[prefix + "variant"] == "single":
            p[prefix + "BLOCK_R"] = codegen.next_pow2(length)
            while p[prefix + "ROWS"] > 1 and \
                    p[prefix + "ROWS"] * p[prefix + "BLOCK_R"] > MAX_SINGLE_ROW_ELEMENTS:
                p[prefix + "ROWS"] //= 2
        else:
            p[prefix + "BLOCK_R"] = min(p[prefix + "BLOCK_R"], max(256, codegen.next_pow2(length)))
    return p


def valid(an: Analysis, params: dict[str, Any]) -> bool:
    for prefix, tail in (("", an if an.family == "rows" else None),
                         ("tail_", getattr(an, "_rows_tail", None))):
        if tail is not None and params[prefix + "variant"] == "single" and \
                codegen.next_pow2(row_length(tail)) > MAX_SINGLE_ROW_ELEMENTS:
            return False
    return True


def fits_shared_memory(an: Analysis, params: dict[str, Any], limit_bytes: int) -> bool:
    """Matmul tiles must fit the target's shared memory: Triton keeps (stages − 1) copies of
    the A and B tiles (a 128x256x64 fp32 tile with 4 stages needs 288 KiB; an H200 has 227)."""
    if an.family != "matmul" or limit_bytes <= 0:
        return True
    element = 4  # operands are loaded as stored; fp32 is the widest we template
    copies = max(1, params["num_stages"] - 1)
    tile = params["BLOCK_M"] * params["BLOCK_K"] + params["BLOCK_K"] * params["BLOCK_N"]
    return copies * tile * element <= limit_bytes


def matmul_dims(an: Analysis) -> tuple[int, int, int]:
    mm = an.nodes[an.matmul]
    a_shape, b_shape = (an.nodes[r].shape for r in mm.refs())
    m = math.prod(a_shape[:-1]) if len(b_shape) == 2 else a_shape[-2]
    return m, b_shape[-1], a_shape[-1]


def random_params(an: Analysis, base: dict[str, Any], rng) -> dict[str, Any]:
    p = dict(base)
    space = SPACES[an.family]
    for key, choices in space.items():
        if key in p:
            p[key] = rng.choice(choices)
    if an.family == "rows":
        p["variant"] = rng.choice(["single", "looped"])
    tail = getattr(an, "_rows_tail", None)
    if tail is not None:
        p["tail_variant"] = rng.choice(["single", "looped"])
        p["tail_num_warps"] = rng.choice(SPACES["rows"]["num_warps"])
        p["tail_ROWS"] = rng.choice(SPACES["rows"]["ROWS"])
        p["tail_BLOCK_R"] = rng.choice(SPACES["rows"]["BLOCK_R"])
    return p


# -- moves ---------------------------------------------------------------------------------

def _step(key: str, direction: int, family: str) -> Callable[[dict], dict | None]:
    def move(p: dict) -> dict | None:
        choices = SPACES[family][key.replace("tail_", "")]
        if key not in p or p[key] not in choices:
            return None
        index = choices.index(p[key]) + direction
        if not 0 <= index < len(choices):
            return None
        return {**p, key: choices[index]}
    return move


def _set(key: str, value) -> Callable[[dict], dict | None]:
    def move(p: dict) -> dict | None:
        if key not in p or p[key] == value:
            return None
        return {**p, key: value}
    return move


MOVES: dict[str, dict[str, Callable[[dict], dict | None]]] = {
    "elementwise": {
        "block_up": _step("BLOCK", 1, "elementwise"),
        "block_down": _step("BLOCK", -1, "elementwise"),
        "warps_up": _step("num_warps", 1, "elementwise"),
        "warps_down": _step("num_warps", -1, "elementwise"),
    },
    "rows": {
        "rows_up": _step("ROWS", 1, "rows"), "rows_down": _step("ROWS", -1, "rows"),
        "warps_up": _step("num_warps", 1, "rows"), "warps_down": _step("num_warps", -1, "rows"),
        "chunk_up": _step("BLOCK_R", 1, "rows"), "chunk_down": _step("BLOCK_R", -1, "rows"),
        "to_looped": _set("variant", "looped"), "to_single": _set("variant", "single"),
    },
    "matmul": {
        "tile_m_up": _step("BLOCK_M", 1, "matmul"), "tile_m_down": _step("BLOCK_M", -1, "matmul"),
        "tile_n_up": _step("BLOCK_N", 1, "matmul"), "tile_n_down": _step("BLOCK_N", -1, "matmul"),
        "tile_k_up": _step("BLOCK_K", 1, "matmul"), "tile_k_down": _step("BLOCK_K", -1, "matmul"),
        "group_m_up": _step("GROUP_M", 1, "matmul"),
        "group_m_down": _step("GROUP_M", -1, "matmul"),
        "warps_up": _step("num_warps", 1, "matmul"),
        "warps_down": _step("num_warps", -1, "matmul"),
        "stages_up": _step("num_stages", 1, "matmul"),
        "stages_down": _step("num_stages", -1, "matmul"),
        "split_k_up": _step("SPLIT_K", 1, "matmul"),
        "split_k_down": _step("SPLIT_K", -1, "matmul"),
        "tf32": _set("PRECISION", "tf32"),
        "tail_rows_up": _step("tail_ROWS", 1, "rows"),
        "tail_warps_up": _step("tail_num_warps", 1, "rows"),
        "tail_to_looped": _set("tail_variant", "looped"),
    },
}

MOVES_BY_DIAGNOSIS = {
    "failure": ["block_down", "warps_down", "rows_down", "to_looped", "chunk_down",
                "tile_m_down", "tile_n_down", "tile_k_down", "stages_down", "split_k_down",
                "tail_to_looped"],
    "memory": ["block_up", "rows_up", "warps_up", "to_single", "chunk_up", "tile_k_up",
               "stages_up", "group_m_up", "tile_n_up", "tail_rows_up"],
    "compute": ["tile_m_up", "tile_n_up", "stages_up", "tf32", "warps_up", "tile_k_up"],
    "latency": ["warps_down", "rows_down", "split_k_up", "tile_m_down", "tile_n_down",
                "block_down", "chunk_down", "warps_up", "tail_warps_up"],
}


def diagnosis_class(status: str, diagnostics: dict[str, Any]) -> str:
    if status in ("compile_error", "runtime_error", "timeout", "incorrect"):
        return "failure"
    bottleneck = diagnostics.get("bottleneck", "")
    if isinstance(bottleneck, dict):  # the evaluator's {"class": ..., "reason": ...}
        bottleneck = bottleneck.get("class", "")
    text = str(bottleneck).lower()
    for key in ("memory", "compute", "latency"):
        if key in text:
            return key
    if "occupancy" in text:
        return "latency"
    return "unknown"


def ordered_moves(an: Analysis, diagnosis: str, policy: str, rng) -> list[str]:
    available = list(MOVES[an.family])
    if policy == "strict":
        available = [m for m in available if m != "tf32"]
    if getattr(an, "_rows_tail", None) is None:
        available = [m for m in available if not m.startswith("tail_")]
    preferred = [m for m in MOVES_BY_DIAGNOSIS.get(diagnosis, []) if m in available]
    rest = [m for m in available if m not in preferred]
    rng.shuffle(rest)
    return preferred + rest


def apply_move(an: Analysis, params: dict, move: str) -> dict | None:
    new = MOVES[an.family][move](params)
    if new is None:
        return None
    new = clamp(an, new)
    return new if new != params and valid(an, new) else None


# -- rendering -----------------------------------------------------------------------------

def render(problem_source: str, an: Analysis, params: dict[str, Any]) -> str:
    header = (f"Generated by KernelHub's offline synthesizer.\n\nFamily: {an.family}; "
              f"reference ops: {', '.join(an.op_names)}.\nTemplate parameters: "
              f"{sorted(params.items())}.\n")
    if an.family == "elementwise":
        kernels, forward = _render_elementwise(an, params)
    elif an.family == "rows":
        kernels, forward = _render_rows(an, params)
    else:
        kernels, forward = _render_matmul(an, params)
    return codegen.assemble(problem_source, an, kernels, forward, header)


def _args(an: Analysis) -> list[str]:
    return an.input_names or [f"x{i}" for i in range(an.input_count)]


def _leaf_prefix(an: Analysis, ids, full_shape) -> list[str]:
    lines = []
    for i in ids:
        node = an.nodes[i]
        if node.op in LEAVES and not node.attrs.get("temp"):
            expr = codegen.leaf_expr(node, _args(an))
            suffix = ".contiguous()" if tuple(node.shape) == tuple(full_shape) else ""
            lines.append(f"kh_t{i} = {expr}{suffix}")
    return lines


def _device_expr(an: Analysis) -> str:
    return f"{_args(an)[0]}.device" if an.input_count else "'cuda'"


def _render_elementwise(an: Analysis, params):
    ids = sorted(an.nodes)
    shape = tuple(an.nodes[an.output].shape)
    prefix = _leaf_prefix(an, ids, shape)
    prefix.append(f"kh_out = torch.empty({shape!r}, device={_device_expr(an)}, "
                  f"dtype={an.output_dtype})")
    kernel, launch = codegen.elementwise_kernel(an, ids, an.output, shape,
                                                "fused_elementwise_kernel", _args(an), prefix,
                                                "kh_out", params)
    return [kernel], launch + ["return kh_out"]


def _render_rows(an: Analysis, params, name="fused_rows_kernel", out_var="kh_out",
                 extra_prefix=None, dtype=None):
    ids = sorted(an.nodes)
    p = {k: params[k] for k in ("variant", "ROWS", "BLOCK_R", "num_warps")}
    writer = codegen.RowsWriter(an, ids, an.output, name, p)
    prefix = list(extra_prefix or []) + _leaf_prefix(an, ids, an.row_shape)
    out_shape = tuple(an.nodes[an.output].shape)
    prefix.append(f"{out_var} = torch.empty({out_shape!r}, device={_device_expr(an)}, "
                  f"dtype={dtype or an.output_dtype})")
    return [writer.kernel()], writer.launch(out_var, prefix) + [f"return {out_var}"]


def prepare_matmul(an: Analysis) -> None:
    """Split a matmul problem into the fused part and an optional rows tail (in place)."""
    nodes = an.nodes
    mm = an.matmul
    depends_on_reduction: set[int] = set()
    for node in an.topo():
        if node.op in REDUCTIONS or any(r in depends_on_reduction for r in node.refs()):
            depends_on_reduction.add(node.id)
    if not depends_on_reduction:
        an._fused, an._split, an._rows_tail = sorted(nodes), an.output, None
        _check_epilogue(an, an._fused)
        return
    tail_ids = sorted(depends_on_reduction)
    crossing = {r for i in tail_ids for r in nodes[i].refs()
                if r not in depends_on_reduction and nodes[r].op not in LEAVES
                and nodes[r].op != "transpose"}
    split = crossing.pop() if len(crossing) == 1 else mm
    fused = _ancestors(an, split)
    tail = {i: copy.deepcopy(nodes[i]) for i in nodes if i not in fused or
            nodes[i].op in LEAVES}
    tail = {i: n for i, n in tail.items() if i in _ancestors_within(tail, an.output, split)}
    split_node = nodes[split]
    tail[split] = IRNode(split, "input", [], {"index": -1, "temp": True},
                         tuple(split_node.shape), torch.float32)
    tail_an = Analysis("rows", dict(sorted(tail.items())), an.output, an.input_count,
                       op_names=an.op_names, input_names=an.input_names)
    tail_an.output_dtype = an.output_dtype
    check_rows(tail_an, sorted(tail))
    an._fused, an._split, an._rows_tail = sorted(fused), split, tail_an
    _check_epilogue(an, an._fused)


def _ancestors(an: Analysis, node_id: int) -> set[int]:
    seen, stack = set(), [node_id]
    while stack:
        i = stack.pop()
        if i not in seen:
            seen.add(i)
            stack.extend(an.nodes[i].refs())
    return seen


def _ancestors_within(nodes: dict, node_id: int, stop: int) -> set[int]:
    seen, stack = set(), [node_id]
    while stack:
        i = stack.pop()
        if i in seen or i not in nodes:
            continue
        seen.add(i)
        if i != stop:
            stack.extend(nodes[i].refs())
    return seen


def _check_epilogue(an: Analysis, fused: list[int]) -> None:
    mm_shape = tuple(an.nodes[an.matmul].shape)
    batched = _batched(an)
    for i in fused:
        node = an.nodes[i]
        if node.op in LEAVES or i == an.matmul or node.op == "transpose":
            continue
        if tuple(node.shape) != mm_shape:
            raise NotCoveredError("an epilogue op that changes the matmul's output shape",
                                  [node.op])
        for r in node.refs():
            leaf = an.nodes[r]
            if leaf.op in LEAVES and not batched and len(mm_shape) > 2:
                padded = (1,) * (len(mm_shape) - len(leaf.shape)) + tuple(leaf.shape)
                strides = torch.empty(padded).expand(mm_shape).stride()
                for d in range(len(mm_shape) - 2):
                    if mm_shape[d] != 1 and strides[d] != strides[d + 1] * mm_shape[d + 1]:
                        raise NotCoveredError("an epilogue operand that cannot be flattened "
                                              "with the matmul rows", ["broadcast"])


def _batched(an: Analysis) -> bool:
    mm = an.nodes[an.matmul]
    return len(an.nodes[mm.refs()[1]].shape) == 3


def _operand(an: Analysis, ref: int) -> str:
    node = an.nodes[ref]
    if node.op == "transpose":
        return codegen.leaf_expr(an.nodes[node.refs()[0]], _args(an)) + ".transpose(-1, -2)"
    return codegen.leaf_expr(node, _args(an))


def _render_matmul(an: Analysis, params):
    mm = an.nodes[an.matmul]
    batched = _batched(an)
    fused = [i for i in an._fused if an.nodes[i].op != "transpose"]
    leaves = [i for i in fused if an.nodes[i].op in LEAVES and i not in mm.refs()
              and not (an.nodes[i].op in LEAVES and _is_operand_leaf(an, i))]
    split_k = params["SPLIT_K"]
    out_is_final = an._rows_tail is None
    out_dtype = an.output_dtype if out_is_final else "torch.float32"
    mm_shape = tuple(mm.shape)
    fwd = [f"kh_a = {_operand(an, mm.refs()[0])}", f"kh_b = {_operand(an, mm.refs()[1])}"]
    if batched:
        fwd += ["kh_batch, kh_m, kh_k = kh_a.shape", "kh_n = kh_b.shape[2]",
                "kh_sa = (kh_a.stride(0), kh_a.stride(1), kh_a.stride(2))",
                "kh_sb = (kh_b.stride(0), kh_b.stride(1), kh_b.stride(2))"]
    else:
        fwd += ["kh_a = kh_a.reshape(-1, kh_a.shape[-1])", "kh_m, kh_k = kh_a.shape",
                "kh_n = kh_b.shape[1]", "kh_batch = 1",
                "kh_sa = (0, kh_a.stride(0), kh_a.stride(1))",
                "kh_sb = (0, kh_b.stride(0), kh_b.stride(1))"]
    fwd.append(f"kh_y = torch.empty({mm_shape!r}, device=kh_a.device, dtype={out_dtype})")
    fwd.append("kh_so = (kh_m * kh_n, kh_n, 1)")
    for i in leaves:
        fwd.insert(0, f"kh_t{i} = {codegen.leaf_expr(an.nodes[i], _args(an))}")
        fwd.append(f"kh_st{i} = _epilogue_strides(kh_t{i}, {mm_shape!r}, {batched})")
    tiles = "triton.cdiv(kh_m, {BLOCK_M}) * triton.cdiv(kh_n, {BLOCK_N})".format(**params)
    consts = ("BLOCK_M={BLOCK_M}, BLOCK_N={BLOCK_N}, GROUP_M={GROUP_M}, "
              .format(**params))
    leaf_args = "".join(f", kh_t{i}, kh_st{i}[0], kh_st{i}[1], kh_st{i}[2]" for i in leaves)
    kernels = []
    epi_ids = [i for i in fused if an.nodes[i].op not in LEAVES or i in leaves]
    epi = codegen.epilogue_lines(an, epi_ids, an.matmul, an._split)
    mm_kernel = codegen.Kernel("matmul_kernel")
    mm_kernel.params = ["a_ptr", "b_ptr", "out_ptr"]
    common = ["M", "N", "K", "stride_ab", "stride_am", "stride_ak", "stride_bb", "stride_bk",
              "stride_bn", "stride_ob", "stride_om", "stride_on"]
    leaf_params = [p for i in leaves for p in (f"in{i}_ptr", f"s{i}_b", f"s{i}_m", f"s{i}_n")]
    block_params = ["BLOCK_M: tl.constexpr", "BLOCK_N: tl.constexpr", "BLOCK_K: tl.constexpr",
                    "GROUP_M: tl.constexpr", "SPLIT_K: tl.constexpr", "PRECISION: tl.constexpr"]
    body = codegen.MATMUL_PREAMBLE.splitlines() + codegen.MATMUL_LOOP.splitlines()
    mm_args = ("kh_a, kh_b, {out}, kh_m, kh_n, kh_k, kh_sa[0], kh_sa[1], kh_sa[2], kh_sb[0], "
               "kh_sb[1], kh_sb[2], kh_so[0], kh_so[1], kh_so[2]")
    launch_tail = (f"BLOCK_K={params['BLOCK_K']}, SPLIT_K={split_k}, "
                   f"PRECISION='{params['PRECISION']}', num_warps={params['num_warps']}, "
                   f"num_stages={params['num_stages']})")
    if split_k == 1:
        mm_kernel.params += common + leaf_params + block_params
        mm_kernel.body = body + epi
        kernels.append(mm_kernel)
        fwd.append(f"matmul_kernel[({tiles}, 1, kh_batch)]("
                   f"{mm_args.format(out='kh_y')}{leaf_args}, "
                   f"{consts}{launch_tail}")
    else:
        mm_kernel.params += common + block_params
        mm_kernel.body = body + [
            "ws_ptrs = out_ptr + batch * stride_ob + rm[:, None] * stride_om "
            "+ rn[None, :] * stride_on",
            "tl.atomic_add(ws_ptrs, acc, mask=tile_mask)"]
        epi_kernel = codegen.Kernel("epilogue_kernel")
        epi_kernel.params = ["ws_ptr", "out_ptr", "M", "N", "stride_ob", "stride_om",
                             "stride_on"] + leaf_params + ["BLOCK_M: tl.constexpr",
                                                           "BLOCK_N: tl.constexpr",
                                                           "GROUP_M: tl.constexpr"]
        epi_kernel.body = codegen.MATMUL_PREAMBLE.splitlines() + [
            "acc = tl.load(ws_ptr + batch * stride_ob + rm[:, None] * stride_om "
            "+ rn[None, :] * stride_on, mask=tile_mask, other=0.0)"] + epi
        kernels += [mm_kernel, epi_kernel]
        fwd.append("kh_ws = torch.zeros((kh_batch, kh_m, kh_n), device=kh_a.device, "
                   "dtype=torch.float32)")
        fwd.append(f"matmul_kernel[({tiles}, {split_k}, kh_batch)]({mm_args.format(out='kh_ws')}, "
                   f"{consts}{launch_tail}")
        fwd.append(f"epilogue_kernel[({tiles}, 1, kh_batch)](kh_ws, kh_y, kh_m, kh_n, kh_so[0], "
                   f"kh_so[1], kh_so[2]"
                   f"{leaf_args}, {consts}num_warps={params['num_warps']})")
    if an._rows_tail is None:
        fwd.append("return kh_y")
        return _with_helper(kernels), fwd
    tail = an._rows_tail
    tail_params = {k[5:]: v for k, v in params.items() if k.startswith("tail_")}
    tail_kernels, tail_fwd = _render_rows(tail, tail_params, name="fused_rows_kernel",
                                          extra_prefix=fwd + [f"kh_t{an._split} = kh_y"])
    return _with_helper(kernels + tail_kernels), tail_fwd


def _is_operand_leaf(an: Analysis, i: int) -> bool:
    mm = an.nodes[an.matmul]
    direct = set(mm.refs())
    via_t = {an.nodes[r].refs()[0] for r in mm.refs() if an.nodes[r].op == "transpose"}
    used_elsewhere = any(i in an.nodes[j].refs() for j in an._fused
                         if j != an.matmul and an.nodes[j].op != "transpose")
    return (i in direct or i in via_t) and not used_elsewhere


class _Helper:
    """Plain Python helper emitted beside the kernels (not a kernel)."""

    name = "_epilogue_strides"

    def source(self) -> str:
        return (
            "def _epilogue_strides(t, shape, batched):\n"
            "    # Strides of an epilogue operand broadcast over the matmul output, as\n"
            "    # (batch, row, column); zero along broadcast dims.\n"
            "    st = t.expand(shape).stride()\n"
            "    if batched:\n"
            "        return st[0], st[1], st[2]\n"
            "    return 0, (st[-2] if len(shape) > 1 else 0), st[-1]\n")


def _with_helper(kernels):
    return [_Helper()] + kernels
