"""Plain helpers on a reference's tensors, shared by the problem's sandbox
(`reference_child`) and its second-shape trial (`reference_shapes`); torch is imported lazily,
like everything the sandbox loads before the problem."""

from __future__ import annotations


def _tensor_bytes(values: list) -> int:
    import torch

    return sum(x.numel() * x.element_size() for x in values if isinstance(x, torch.Tensor))


def degenerate_reason(outputs: list, native_dtypes: list[str] | None = None) -> str:
    """Why a reference output cannot tell right from wrong, or '' when it can.

    `native_dtypes` are the dtypes the problem returns (e.g. "torch.float32"): a float64
    reference beyond such a dtype's finite range (a cumprod of large inputs, exp in fp16)
    is one no correct kernel can return, so it counts as degenerate too."""
    import torch

    for i, o in enumerate(outputs):
        if not o.is_floating_point():
            continue
        if not torch.isfinite(o).all():
            return f"output {i} contains NaN or Inf"
        if o.numel() == 0:
            return f"output {i} is empty"
        peak = float(o.abs().max())
        native = _float_dtype(native_dtypes[i]) if native_dtypes and i < len(native_dtypes) else None
        if native is not None and peak > torch.finfo(native).max:
            return (f"output {i} overflows {str(native).removeprefix('torch.')} "
                    f"(max |ref| = {peak:.3g})")
        if peak < 1e-10:
            return f"output {i} is all (near) zero (max |ref| = {peak:.3g})"
        if o.numel() > 1 and float(o.max() - o.min()) <= 1e-12 * peak:
            return f"output {i} is constant ({float(o.flatten()[0]):.6g} everywhere)"
    return ""


def _float_dtype(name: str):
    """The torch floating dtype named "torch.float16" (or "float16"), else None."""
    import torch

    dtype = getattr(torch, str(name).removeprefix("torch."), None)
    return dtype if isinstance(dtype, torch.dtype) and dtype.is_floating_point else None


def _as_list(out) -> list:
    import torch

    return [out] if isinstance(out, torch.Tensor) else list(out)


def _on(inputs: list, float_dtype, device: str) -> list:
    import torch

    moved = []
    for x in inputs:
        if isinstance(x, torch.Tensor):
            x = x.to(float_dtype) if float_dtype is not None and x.is_floating_point() else x
            x = x.to(device)
        moved.append(x)
    return moved
