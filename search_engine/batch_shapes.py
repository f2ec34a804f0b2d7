"""A problem's inputs at another batch size: the leading dimension that a user's call changes
most often. Both the synthesizer's probe (which traces the model at other batch sizes, on the
meta device, to learn which generated sizes follow the batch) and the evaluator (which checks
a candidate at a second shape) derive them here, in the problem's sandbox only.

Two ways, in order:
1. the problem's `get_inputs()` reads its batch size from a module-level global
   (``batch_size = 16``, as KernelBench files do): set the global, draw again, restore it;
2. otherwise the tensors whose leading dimension is the batch are cut (or repeated) to the
   new size, so their values stay inside whatever domain the problem draws them from
   (class indices, probabilities).

The Model is never rebuilt: its weights do not depend on the batch.
"""

from __future__ import annotations

from typing import Callable

BATCH_GLOBALS = ("batch_size", "batch", "BATCH_SIZE", "BATCH", "bs", "B", "N")


def leading_batch(inputs: list) -> int | None:
    """The batch size: the leading dim of the first tensor input with one (None: no batch)."""
    import torch

    for x in inputs:
        if isinstance(x, torch.Tensor) and x.dim() >= 1:
            return int(x.shape[0])
    return None


def batch_positions(inputs: list) -> list[int]:
    """Which inputs carry the batch: tensors whose leading dim is the first one's."""
    import torch

    batch = leading_batch(inputs)
    return [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x.dim() >= 1
            and int(x.shape[0]) == batch]


SECOND_SHAPE_BYTES = 512 << 20  # the second shape's inputs travel through the parent


def second_batch(batch: int, input_bytes: int = 0,
                 limit_bytes: int = SECOND_SHAPE_BYTES) -> int | None:
    """The batch size the evaluator checks besides the problem's own: half of it (cheap to
    run), or 2 when the problem's batch is 1; halved again while the inputs (`input_bytes`
    at `batch`) would be over `limit_bytes`; None when no other batch fits."""
    other = batch // 2 if batch >= 2 else 2
    per_row = input_bytes / max(batch, 1)
    while other > 1 and per_row * other > limit_bytes:
        other //= 2
    return None if other == batch or per_row * other > limit_bytes else other


def traced_batches(batch: int) -> tuple[int, int]:
    """The other batch sizes the synthesizer's probe traces at: two, far enough apart that a
    generated size which does not follow the batch linearly (a power of two chosen for the
    row, a threshold) shows up as a difference between the renders."""
    return batch + 1, 2 * batch + 3


def input_shapes(inputs: list) -> list[list[int]]:
    """Each input's shape ([] for a 0-d tensor or a non-tensor): what `verified_shapes` lists."""
    import torch

    return [list(x.shape) if isinstance(x, torch.Tensor) else [] for x in inputs]


def inputs_at_batch(module, inputs: list, batch: int,
                    draw: Callable[[], list] | None = None) -> tuple[list, str]:
    """`inputs` at leading size `batch` and how they were made; raises ValueError when the
    inputs have no batch dimension. `draw` calls `get_inputs()` (under the caller's seed and
    device); without it only resizing is tried."""
    positions = batch_positions(inputs)
    if not positions:
        raise ValueError("the problem's inputs have no leading (batch) dimension")
    if draw is not None:
        redrawn = _redrawn_with_global(module, inputs, positions, batch, draw)
        if redrawn is not None:
            return redrawn
    return [_resized(x, batch) if i in positions else x for i, x in enumerate(inputs)], \
        "batch inputs resized along their leading dim"


def _redrawn_with_global(module, inputs, positions, batch, draw):
    old = leading_batch(inputs)
    for name in BATCH_GLOBALS:
        value = getattr(module, name, None)
        if type(value) is not int or value != old:
            continue
        setattr(module, name, batch)
        try:
            fresh = list(draw())
        except Exception:  # noqa: BLE001 - the global is not the batch after all
            fresh = None
        finally:
            setattr(module, name, value)
        if fresh is not None and _same_but_batch(inputs, fresh, positions, batch):
            return fresh, f"get_inputs() with {name} = {batch}"
    return None


def _same_but_batch(old: list, new: list, positions: list[int], batch: int) -> bool:
    """`new` is `old` with only the batch inputs' leading dim changed to `batch`."""
    import torch

    if len(old) != len(new):
        return False
    for i, (a, b) in enumerate(zip(old, new)):
        if isinstance(a, torch.Tensor) != isinstance(b, torch.Tensor):
            return False
        if not isinstance(a, torch.Tensor):
            continue
        want = (batch, *a.shape[1:]) if i in positions else tuple(a.shape)
        if tuple(b.shape) != tuple(want) or a.dtype != b.dtype:
            return False
    return True


def _resized(x, batch: int):
    import torch

    n = int(x.shape[0])
    if batch <= n:
        return x[:batch].clone()
    reps = -(-batch // n)
    return torch.cat([x] * reps, dim=0)[:batch].clone()
