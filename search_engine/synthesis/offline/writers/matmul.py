"""The matmul family: a tiled ``tl.dot`` kernel with group-M swizzle, stages, warps and
split-K; the epilogue (bias, pointwise chain) is fused on the accumulator; reductions after
the matmul run in a second, generated rows kernel over the fused result. With split-K the
partial products are accumulated atomically into an fp32 workspace and the epilogue runs in
its own kernel. ``PRECISION`` is tl.dot's input precision: ``tf32x3`` (strict fp32 on
tensor cores), ``ieee`` or ``tf32`` (tf32/bf16 policies only)."""

from __future__ import annotations

import torch

from search_engine.synthesis.offline.frontend.ir import LEAVES, Analysis
from search_engine.synthesis.offline.plan.gemm_epilogue import is_batched, matmul_dims
from search_engine.synthesis.offline.plan.kernel_plan import MATMUL_KERNEL, ROWS_KERNEL
from search_engine.synthesis.offline.writers import codegen, layout_copy, rows
from search_engine.synthesis.offline.writers.codegen import operand, pointwise


# the grid's axes and tile counts, then the tile of program `pid` (a persistent program
# walks several: `persistent_body`)
MATMUL_GRID = """\
pid_k = tl.program_id(1)
batch = tl.program_id(2)
num_pid_m = tl.cdiv(M, BLOCK_M)
num_pid_n = tl.cdiv(N, BLOCK_N)"""

MATMUL_TILE = """\
num_pid_in_group = GROUP_M * num_pid_n
group_id = pid // num_pid_in_group
first_pid_m = group_id * GROUP_M
group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
pid_n = (pid % num_pid_in_group) // group_size_m
rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
tile_mask = (rm[:, None] < M) & (rn[None, :] < N)"""

MATMUL_PREAMBLE = "pid = tl.program_id(0)\n" + MATMUL_GRID + "\n" + MATMUL_TILE

MATMUL_LOOP = """\
rk = tl.arange(0, BLOCK_K)
a_base = a_ptr + batch * stride_ab + rm[:, None] * stride_am
b_base = b_ptr + batch * stride_bb + rn[None, :] * stride_bn
acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
for k0 in range(pid_k * BLOCK_K, K, BLOCK_K * SPLIT_K):
    k = k0 + rk
    a = tl.load(a_base + k[None, :] * stride_ak, mask=(rm[:, None] < M) & (k[None, :] < K),
                other=0.0)
    b = tl.load(b_base + k[:, None] * stride_bk, mask=(k[:, None] < K) & (rn[None, :] < N),
                other=0.0)
    acc = tl.dot(a, b, acc, input_precision=PRECISION)"""


def tma_loop(a_transposed: bool, b_transposed: bool) -> list[str]:
    """The K loop through Hopper TMA descriptors (host-made, passed as a_ptr/b_ptr): the copy
    engine moves the tiles to shared memory, out-of-range parts read as zero (no masks). A
    transposed operand is described as stored and its tile transposed in the kernel."""
    a = ("tl.trans(a_ptr.load([k0, pid_m * BLOCK_M]))" if a_transposed
         else "a_ptr.load([pid_m * BLOCK_M, k0])")
    b = ("tl.trans(b_ptr.load([pid_n * BLOCK_N, k0]))" if b_transposed
         else "b_ptr.load([k0, pid_n * BLOCK_N])")
    return ["acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)",
            "for k0 in range(pid_k * BLOCK_K, K, BLOCK_K * SPLIT_K):",
            f"    a = {a}", f"    b = {b}",
            "    acc = tl.dot(a, b, acc, input_precision=PRECISION)"]


# PERSISTENT: one program per SM slot walks the output tiles (tile, tile + programs, ...), so
# Triton's pipeliner overlaps a tile's epilogue and the next tile's first loads (a flattened
# loop nest) and the grid has no partial last wave of launches. Programs per SM: two, so a
# program's epilogue overlaps another's main loop where the tiles allow two resident.
PERSISTENT_PROGRAMS_PER_SM = 2
PERSISTENT_CPU_PROGRAMS = 4  # the interpreter: a few programs, each taking several tiles


def persistent_applies(an: Analysis, params: dict) -> bool:
    """A persistent grid covers one 2-D tile space: no batch axis, no split K."""
    return not is_batched(an) and params.get("SPLIT_K", 1) == 1


def persistent_body(tile: list[str]) -> list[str]:
    """`tile` (the K loop and the epilogue of the tile at `pid`, after MATMUL_TILE) inside
    the loop over the tiles this program takes."""
    head = MATMUL_GRID.splitlines() + [
        "for pid in tl.range(tl.program_id(0), num_pid_m * num_pid_n, NUM_PROGRAMS, "
        "flatten=True):"]
    return head + ["    " + line for line in MATMUL_TILE.splitlines() + tile]


def _persistent_launch(tiles: str) -> list[str]:
    """Host lines: how many programs the persistent grid runs (`kh_programs`)."""
    return [f"kh_tiles = {tiles}",
            "kh_programs = min(kh_tiles, torch.cuda.get_device_properties(kh_a.device)"
            f".multi_processor_count * {PERSISTENT_PROGRAMS_PER_SM} if kh_a.is_cuda "
            f"else {PERSISTENT_CPU_PROGRAMS})"]


def _transposed(an: Analysis) -> tuple[bool, bool]:
    mm = an.nodes[an.matmul]
    return tuple(an.nodes[r].op == "transpose" for r in mm.refs())


KMAJOR_MIN_M = 256  # below this B's copy costs more than the MMAs it speeds up


def b_kmajor_pays(an: Analysis) -> bool:
    """Whether to copy B K-major before the kernel: Hopper's tf32 MMAs (tf32 and tf32x3)
    take 32-bit operands K-major only, so an N-major fp32 B (a plain ``a @ b``) runs them
    at about half speed; the copy is one read and one write of B."""
    return b_kmajor_applies(an) and matmul_dims(an)[0] >= KMAJOR_MIN_M


def b_kmajor_applies(an: Analysis) -> bool:
    """B is a stored N-major fp32 operand (a copy would change its layout)."""
    b = an.nodes[an.nodes[an.matmul].refs()[1]]
    return not _transposed(an)[1] and b.dtype == torch.float32


def _operand_layout(an: Analysis, params: dict) -> tuple[bool, bool]:
    """(A, B) stored transposed as the kernel reads them (B after the K-major copy)."""
    a_t, b_t = _transposed(an)
    return a_t, b_t or bool(params.get("B_KMAJOR"))


def tma_eligible(an: Analysis) -> bool:
    """TMA needs 2-D operands whose stored rows are 16-byte aligned."""
    if is_batched(an):
        return False
    m, n, k = matmul_dims(an)
    a_t, b_t = _transposed(an)
    mm = an.nodes[an.matmul]
    a_rank = len(an.nodes[mm.refs()[0]].shape)
    size = max(an.nodes[r].dtype.itemsize for r in mm.refs())
    per_16 = max(1, 16 // size)
    a_row = m if a_t else k
    b_row = k if b_t else n
    return (not a_t or a_rank == 2) and a_row % per_16 == 0 and b_row % per_16 == 0


def tma_store_applies(an: Analysis, params: dict) -> bool:
    """The output tile stored through a TMA descriptor: a TMA kernel without split K (whose
    partials go to an atomic workspace) over an output whose rows are 16-byte aligned."""
    if not params.get("TMA") or params.get("SPLIT_K", 1) != 1 or not tma_eligible(an):
        return False
    dtype = an.output_dtype if an._rows_tail is None else "torch.float32"
    return matmul_dims(an)[1] * getattr(torch, dtype.split(".")[-1]).itemsize % 16 == 0


def _tma_descriptors(an: Analysis, params: dict) -> list[str]:
    a_t, b_t = _operand_layout(an, params)
    bm, bn, bk = params["BLOCK_M"], params["BLOCK_N"], params["BLOCK_K"]
    a_view, a_block = ("kh_a.t()", [bk, bm]) if a_t else ("kh_a", [bm, bk])
    b_view, b_block = ("kh_b.t()", [bn, bk]) if b_t else ("kh_b", [bk, bn])
    return ["from triton.tools.tensor_descriptor import TensorDescriptor",
            f"kh_ad = TensorDescriptor.from_tensor({layout_copy.contiguous(a_view)}, {a_block})",
            f"kh_bd = TensorDescriptor.from_tensor({layout_copy.contiguous(b_view)}, {b_block})"]


def epilogue_lines(an: Analysis, ids: list[int], mm_id: int, out_id: int,
                   tma_store: bool = False) -> list[str]:
    """The epilogue on the accumulator, then the tile's store: through pointers, or with
    `tma_store` through the output's descriptor (the copy engine writes whole lines from
    shared memory while the program goes on; out-of-range parts are clipped)."""
    names = {mm_id: "acc"}
    lines = []
    for i in ids:
        node = an.nodes[i]
        if i == mm_id:
            continue
        if node.op in LEAVES:
            lines.append(f"e{i} = tl.load(in{i}_ptr + batch * s{i}_b + rm[:, None] * s{i}_m "
                         f"+ rn[None, :] * s{i}_n, mask=tile_mask, other=0.0).to(tl.float32)")
        else:
            lines.append(f"e{i} = " + pointwise(node, [operand(a, names) for a in node.operands]))
        names[i] = f"e{i}"
    if tma_store:
        lines.append(f"out_ptr.store([pid_m * BLOCK_M, pid_n * BLOCK_N], "
                     f"{names[out_id]}.to(out_ptr.dtype))")
        return lines
    lines.append("out_ptrs = out_ptr + batch * stride_ob + rm[:, None] * stride_om "
                 "+ rn[None, :] * stride_on")
    lines.append(f"tl.store(out_ptrs, {names[out_id]}.to(out_ptr.dtype.element_ty), "
                 "mask=tile_mask)")
    return lines


def _operand(an: Analysis, ref: int) -> str:
    node = an.nodes[ref]
    if node.op == "transpose":
        return codegen.leaf_expr(an.nodes[node.refs()[0]], codegen.args_of(an)) + ".transpose(-1, -2)"
    return codegen.leaf_expr(node, codegen.args_of(an))


def render(an: Analysis, params):
    mm = an.nodes[an.matmul]
    batched = is_batched(an)
    fused = [i for i in an._fused if an.nodes[i].op != "transpose"]
    # an operand the epilogue reads too (a residual ``fc(x) + x``) is loaded there as well
    leaves = [i for i in fused if an.nodes[i].op in LEAVES and not _is_operand_leaf(an, i)]
    split_k = params["SPLIT_K"]
    out_is_final = an._rows_tail is None
    out_dtype = an.output_dtype if out_is_final else "torch.float32"
    mm_shape = tuple(mm.shape)
    fwd = [f"kh_a = {_operand(an, mm.refs()[0])}", f"kh_b = {_operand(an, mm.refs()[1])}"]
    if params.get("B_KMAJOR"):  # see b_kmajor_pays; a no-op when B is K-major already
        fwd.append(f"kh_b = {layout_copy.contiguous('kh_b.transpose(-1, -2)')}.transpose(-1, -2)")
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
        fwd.insert(0, f"kh_t{i} = {codegen.leaf_expr(an.nodes[i], codegen.args_of(an))}")
        fwd.append(f"kh_st{i} = _epilogue_strides(kh_t{i}, {mm_shape!r}, {batched})")
    tiles = "triton.cdiv(kh_m, {BLOCK_M}) * triton.cdiv(kh_n, {BLOCK_N})".format(**params)
    consts = ("BLOCK_M={BLOCK_M}, BLOCK_N={BLOCK_N}, GROUP_M={GROUP_M}, "
              .format(**params))
    leaf_args = "".join(f", kh_t{i}, kh_st{i}[0], kh_st{i}[1], kh_st{i}[2]" for i in leaves)
    kernels = []
    epi_ids = [i for i in fused if an.nodes[i].op not in LEAVES or i in leaves]
    tma_store = bool(params.get("TMA_STORE")) and tma_store_applies(an, params)
    epi = epilogue_lines(an, epi_ids, an.matmul, an._split, tma_store)
    mm_kernel = codegen.Kernel(MATMUL_KERNEL)
    mm_kernel.params = ["a_ptr", "b_ptr", "out_ptr"]
    common = ["M", "N", "K", "stride_ab", "stride_am", "stride_ak", "stride_bb", "stride_bk",
              "stride_bn", "stride_ob", "stride_om", "stride_on"]
    leaf_params = [p for i in leaves for p in (f"in{i}_ptr", f"s{i}_b", f"s{i}_m", f"s{i}_n")]
    block_params = ["BLOCK_M: tl.constexpr", "BLOCK_N: tl.constexpr", "BLOCK_K: tl.constexpr",
                    "GROUP_M: tl.constexpr", "SPLIT_K: tl.constexpr", "PRECISION: tl.constexpr"]
    tma = bool(params.get("TMA"))
    loop = tma_loop(*_operand_layout(an, params)) if tma else MATMUL_LOOP.splitlines()
    body = MATMUL_PREAMBLE.splitlines() + loop
    if tma:
        fwd += _tma_descriptors(an, params)
    if tma_store:
        fwd.append(f"kh_yd = TensorDescriptor.from_tensor(kh_y.view(kh_m, kh_n), "
                   f"[{params['BLOCK_M']}, {params['BLOCK_N']}])")
    out = "kh_yd" if tma_store else "kh_y"
    operands = "kh_ad, kh_bd" if tma else "kh_a, kh_b"
    mm_args = (operands + ", {out}, kh_m, kh_n, kh_k, kh_sa[0], kh_sa[1], kh_sa[2], kh_sb[0], "
               "kh_sb[1], kh_sb[2], kh_so[0], kh_so[1], kh_so[2]")
    launch_tail = (f"BLOCK_K={params['BLOCK_K']}, SPLIT_K={split_k}, "
                   f"PRECISION='{params['PRECISION']}', num_warps={params['num_warps']}, "
                   f"num_stages={params['num_stages']})")
    if params.get("PERSISTENT"):  # split K 1, unbatched: see persistent_applies
        mm_kernel.params += common + ["NUM_PROGRAMS"] + leaf_params + block_params
        mm_kernel.body = persistent_body(loop + epi)
        kernels.append(mm_kernel)
        fwd += _persistent_launch(tiles)
        fwd.append(f"{MATMUL_KERNEL}[(kh_programs, 1, 1)]("
                   f"{mm_args.format(out=out)}, kh_programs{leaf_args}, "
                   f"{consts}{launch_tail}")
    elif split_k == 1:
        mm_kernel.params += common + leaf_params + block_params
        mm_kernel.body = body + epi
        kernels.append(mm_kernel)
        fwd.append(f"{MATMUL_KERNEL}[({tiles}, 1, kh_batch)]("
                   f"{mm_args.format(out=out)}{leaf_args}, "
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
        epi_kernel.body = MATMUL_PREAMBLE.splitlines() + [
            "acc = tl.load(ws_ptr + batch * stride_ob + rm[:, None] * stride_om "
            "+ rn[None, :] * stride_on, mask=tile_mask, other=0.0)"] + epi
        kernels += [mm_kernel, epi_kernel]
        fwd.append("kh_ws = torch.zeros((kh_batch, kh_m, kh_n), device=kh_a.device, "
                   "dtype=torch.float32)")
        fwd.append(f"{MATMUL_KERNEL}[({tiles}, {split_k}, kh_batch)]({mm_args.format(out='kh_ws')}, "
                   f"{consts}{launch_tail}")
        fwd.append(f"epilogue_kernel[({tiles}, 1, kh_batch)](kh_ws, kh_y, kh_m, kh_n, kh_so[0], "
                   f"kh_so[1], kh_so[2]"
                   f"{leaf_args}, {consts}num_warps={params['num_warps']})")
    if an._rows_tail is None:
        fwd.append("return kh_y")
        return _with_helper(kernels), fwd
    tail = an._rows_tail
    tail_params = {k[5:]: v for k, v in params.items() if k.startswith("tail_")}
    tail_kernels, tail_fwd = rows.render(tail, tail_params, name=ROWS_KERNEL,
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
