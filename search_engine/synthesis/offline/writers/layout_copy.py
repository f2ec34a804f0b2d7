"""Layout copies (a transposed operand made contiguous, a channels-last copy) as a tiled
kernel in the candidate file.

torch's `view.contiguous()` of a transposed view reads or writes at a stride: on the H100 a
K-major copy of a 1 GB bmm operand took 2.1 ms (1 TB/s) and of a 524288 x 256 operand 4.4 ms
(0.24 TB/s), more than the GEMM after it. The copy below merges the view's dims into at most
three runs, tiles the two that are contiguous in the source and in the copy, and lets Triton
turn the tile in registers and shared memory, so both sides move whole lines. A view it
cannot take (four runs or more, a batch past the grid's limit) is copied by torch as before.
"""

from __future__ import annotations

HELPER = "kh_contiguous"
KERNEL = "kh_layout_copy_kernel"  # a copy, not one of the plan's kernels (kernel_plan.py)

SOURCE = '''

@triton.jit
def kh_layout_copy_kernel(src, dst, n_t, n_c, s_t, s_c, s_b, d_t, d_b, tiles_c,
                          BLOCK_T: tl.constexpr, BLOCK_C: tl.constexpr):
    """dst (its last dim contiguous) = src at the tile's strides, read along the tile's
    axis t (the source's contiguous run) and written along c (the copy's)."""
    pid = tl.program_id(0)
    b = tl.program_id(1).to(tl.int64)
    rt = ((pid // tiles_c) * BLOCK_T + tl.arange(0, BLOCK_T)).to(tl.int64)
    rc = ((pid % tiles_c) * BLOCK_C + tl.arange(0, BLOCK_C)).to(tl.int64)
    mask = (rt[:, None] < n_t) & (rc[None, :] < n_c)
    tile = tl.load(src + b * s_b + rt[:, None] * s_t + rc[None, :] * s_c, mask=mask)
    tl.store(dst + b * d_b + rt[:, None] * d_t + rc[None, :], tile, mask=mask)


def kh_merged_runs(shape, strides):
    """(size, stride) runs of the view: dims that are adjacent in memory merged, size-1 dims
    dropped."""
    runs = []
    for size, stride in zip(shape, strides):
        if size == 1:
            continue
        if runs and runs[-1][1] == stride * size:
            runs[-1] = (runs[-1][0] * size, stride)
        else:
            runs.append((size, stride))
    return runs


def kh_contiguous(view):
    """`view.contiguous()`, a transposing copy written by a tiled kernel."""
    if view.is_contiguous():
        return view
    runs = kh_merged_runs(view.shape, view.stride())
    if len(runs) > 3:
        return view.contiguous()
    runs = [(1, 0)] * (3 - len(runs)) + runs
    sizes = [size for size, _ in runs]
    dst_strides = [sizes[1] * sizes[2], sizes[2], 1]
    # the tile's other axis: the outer run nearest to contiguous in the source
    t = 0 if runs[0][1] < runs[1][1] and sizes[0] > 1 else 1
    b = 1 - t
    if sizes[b] > 65535:
        return view.contiguous()
    out = torch.empty(view.shape, device=view.device, dtype=view.dtype)
    block_t, block_c = 64, 64
    tiles_c = triton.cdiv(sizes[2], block_c)
    grid = (triton.cdiv(sizes[t], block_t) * tiles_c, sizes[b])
    kh_layout_copy_kernel[grid](view, out, sizes[t], sizes[2], runs[t][1], runs[2][1],
                                runs[b][1], dst_strides[t], dst_strides[b], tiles_c,
                                BLOCK_T=block_t, BLOCK_C=block_c, num_warps=4)
    return out
'''


def contiguous(view: str) -> str:
    """The forward() expression of `view` copied contiguous by the tiled kernel."""
    return f"{HELPER}({view})"


def needed(lines: list[str]) -> bool:
    return any(f"{HELPER}(" in line for line in lines)
