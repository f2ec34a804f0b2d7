"""Convolutions and pooling for the lowering (`lowering.py`): ``conv`` nodes (1-D/2-D/3-D,
stride, padding, dilation, groups, transposed) and ``pool`` nodes (max/avg, adaptive) from
``F.conv*``/``F.*pool*`` calls and their modules; global adaptive pooling is a reduction.
``pad`` nodes (``F.pad`` and the convolutions' non-zero ``padding_mode``) are index ops: a
kernel reads through them (`staged_expr.Expr`). Nearest upsampling by whole factors and
pixel (un)shuffle, pooling's inverses, are reshapes, expands and permutes."""

from __future__ import annotations

import math

from search_engine.synthesis.offline.frontend.builder import _int, _Uncovered
from search_engine.synthesis.offline.frontend.ir import Const
from search_engine.synthesis.offline.frontend.lowering_args import int_tuple
from search_engine.synthesis.offline.frontend.lowering_index import reshape


def conv_node(tr, x, weight, bias, nd, stride, padding, dilation, groups, transposed,
              output_padding, shape):
    if isinstance(padding, str):
        padding = _string_padding(padding, tr.shape(weight)[2:], int_tuple(dilation, nd))
    operands = [x, weight] + ([bias] if isinstance(bias, int) else [])
    return tr.add("conv", operands, shape, stride=int_tuple(stride, nd),
                  padding=int_tuple(padding, nd), dilation=int_tuple(dilation, nd),
                  output_padding=int_tuple(output_padding, nd),
                  groups=int(groups), transposed=bool(transposed))


def _string_padding(padding, taps, dilation) -> tuple[int, ...]:
    """The left padding of ``padding='valid'``/``'same'``: 'same' (stride 1) pads
    dilation·(k − 1) in all, the odd one on the right, so the output keeps the input's size;
    the kernel reads only the left offset and masks the rest."""
    if padding == "valid":
        return (0,) * len(taps)
    if padding == "same":
        return tuple(d * (k - 1) // 2 for k, d in zip(taps, dilation))
    raise _Uncovered(f"conv padding={padding!r}")


def pad_node(tr, x, pairs, mode, value, shape):
    """`pairs`: (left, right) per dim of x, outermost first; the kernel needs the left pads
    (the output shape gives the rest)."""
    if any(p < 0 for pair in pairs for p in pair):
        raise _Uncovered("pad (negative: a crop)")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise _Uncovered(f"pad(mode={mode!r})")
    in_shape = tr.shape(x)
    if mode in ("reflect", "circular") and any(
            max(pair) > (size - 1 if mode == "reflect" else size)
            for pair, size in zip(pairs, in_shape)):
        raise _Uncovered(f"pad(mode={mode!r}) wider than the input")
    return tr.add("pad", [x], shape, padding=tuple(left for left, _ in pairs), mode=mode,
                  value=float(value or 0.0))


def pad_function(tr, x, get, shape):
    """F.pad(x, pad, mode, value): `pad` lists (left, right) pairs from the last dim back."""
    flat = [int(_int(p)) for p in get(1, "pad")]
    rank = len(tr.shape(x))
    pairs = [(0, 0)] * rank
    for k in range(len(flat) // 2):
        pairs[rank - 1 - k] = (flat[2 * k], flat[2 * k + 1])
    value = get(3, "value")
    value = value.value if hasattr(value, "value") else value
    return pad_node(tr, x, pairs, get(2, "mode", "constant"), value, shape)


def padded_conv_input(tr, x, sub):
    """A conv module's input padded by its non-zero ``padding_mode`` (torch pads it so, then
    convolves without padding)."""
    flat = sub._reversed_padding_repeated_twice
    rank = len(tr.shape(x))
    pairs = [(0, 0)] * rank
    for k in range(len(flat) // 2):
        pairs[rank - 1 - k] = (int(flat[2 * k]), int(flat[2 * k + 1]))
    shape = tuple(s + a + b for s, (a, b) in zip(tr.shape(x), pairs))
    return pad_node(tr, x, pairs, sub.padding_mode, 0.0, shape)


def conv_function(tr, fx_node, name, args, get, shape):
    nd = {"conv1d": 1, "conv2d": 2, "conv3d": 3, "conv_transpose1d": 1, "conv_transpose2d": 2,
          "conv_transpose3d": 3}.get(name)
    if nd is None:
        raise _Uncovered(name)
    x, weight, bias = args[0], get(1, "weight"), get(2, "bias")
    if name.startswith("conv_transpose"):
        return conv_node(tr, x, weight, bias, nd, get(3, "stride", 1), get(4, "padding", 0),
                         get(7, "dilation", 1), _int(get(6, "groups", 1)), True,
                         get(5, "output_padding", 0), shape)
    return conv_node(tr, x, weight, bias, nd, get(3, "stride", 1), get(4, "padding", 0),
                     get(5, "dilation", 1), _int(get(6, "groups", 1)), False, 0, shape)


def pool_node(tr, x, mode, nd, kernel, stride, padding, dilation, ceil_mode,
              count_include_pad, divisor, shape):
    stride = kernel if stride is None or stride == [] or stride == () else stride
    return tr.add("pool", [x], shape, mode=mode, kernel=int_tuple(kernel, nd),
                  stride=int_tuple(stride, nd), padding=int_tuple(padding, nd),
                  dilation=int_tuple(dilation, nd), ceil_mode=bool(ceil_mode),
                  count_include_pad=bool(count_include_pad),
                  divisor=None if divisor is None else float(_int(divisor)))


def adaptive_pool(tr, x, mode, nd, output_size, shape):
    """Adaptive pooling: global is a reduction, an even split a plain pool; otherwise window i
    covers [floor(i·in/out), ceil((i+1)·in/out)) (torch's definition), a pool whose windows
    the kernel computes per output (``adaptive``) over at most `kernel` taps."""
    in_shape = tr.shape(x)
    spatial = in_shape[-nd:]
    sizes = _int(output_size)
    sizes = tuple(sizes) if isinstance(sizes, (list, tuple)) else (sizes,) * nd
    sizes = sizes * nd if len(sizes) == 1 else sizes
    out = tuple(s if o is None else int(_int(o)) for o, s in zip(sizes, spatial))
    if all(o == 1 for o in out):  # global pooling is a reduction
        dims = tuple(range(len(in_shape) - nd, len(in_shape)))
        if mode == "avg":
            return tr.mean(x, dims, True)
        return tr.reduce("max", x, dims, True)
    if not any(s % o for s, o in zip(spatial, out)):
        kernel = tuple(s // o for s, o in zip(spatial, out))
        return pool_node(tr, x, mode, nd, kernel, kernel, 0, 1, False, True, None, shape)
    window = tuple(max(-(-(i + 1) * s // o) - i * s // o for i in range(o))
                   for s, o in zip(spatial, out))
    return tr.add("pool", [x], shape, mode=mode, kernel=window, stride=(1,) * nd,
                  padding=(0,) * nd, dilation=(1,) * nd, ceil_mode=False,
                  count_include_pad=False, divisor=None, adaptive=True)


def lp_pool(tr, x, nd, norm_type, kernel, stride, ceil_mode, shape):
    """Power-average pooling as torch computes it: (avg_pool(x^p) · window size)^(1/p)."""
    p = float(_int(norm_type)) if not hasattr(norm_type, "value") else float(norm_type.value)
    pooled = pool_node(tr, tr.unary("powc", x, exponent=p), "avg", nd, kernel, stride, 0, 1,
                       ceil_mode, True, None, shape)
    window = float(math.prod(int_tuple(kernel, nd)))
    return tr.unary("powc", tr.binary("mul", pooled, Const(window), shape), exponent=1.0 / p)


def pool_function(tr, fx_node, name, x, get, shape):
    nd = int(name[-2]) if name[-2:] in ("1d", "2d", "3d") else None
    if nd is None:
        raise _Uncovered(name)
    if name.startswith("adaptive_"):
        if fx_node.kwargs.get("return_indices"):
            raise _Uncovered(f"{name} with indices")
        return adaptive_pool(tr, x, "avg" if "avg" in name else "max", nd,
                             get(1, "output_size"), shape)
    if name.startswith("max_pool"):
        if bool(_int(get(6, "return_indices", False))):
            raise _Uncovered(f"{name} with indices")
        return pool_node(tr, x, "max", nd, get(1, "kernel_size"), get(2, "stride"),
                         get(3, "padding", 0), get(4, "dilation", 1),
                         _int(get(5, "ceil_mode", False)), True, None, shape)
    if name.startswith("lp_pool"):
        return lp_pool(tr, x, nd, get(1, "norm_type"), get(2, "kernel_size"), get(3, "stride"),
                       _int(get(4, "ceil_mode", False)), shape)
    if name.startswith("avg_pool"):
        return pool_node(tr, x, "avg", nd, get(1, "kernel_size"), get(2, "stride"),
                         get(3, "padding", 0), 1, _int(get(4, "ceil_mode", False)),
                         _int(get(5, "count_include_pad", True)),
                         get(6, "divisor_override") if nd > 1 else None, shape)
    raise _Uncovered(name)


def upsample(tr, x, mode, shape):
    """Nearest upsampling by a whole factor r per dim: out[i] = in[i // r], so x viewed with a
    size-1 dim after each spatial one, expanded to r there and flattened back."""
    in_shape = tr.shape(x)
    if mode not in ("nearest", "nearest-exact"):
        raise _Uncovered(f"interpolate(mode={mode!r})")
    lead, spatial, out = in_shape[:2], in_shape[2:], tuple(shape[2:])
    if len(out) != len(spatial) or any(o % i for o, i in zip(out, spatial)):
        raise _Uncovered("interpolate (not a whole scale factor)")
    ratios = [o // i for o, i in zip(out, spatial)]
    spread = reshape(tr, x, lead + sum(((i, 1) for i in spatial), ()))
    spread = tr.add("expand", [spread], lead + sum(((i, r) for i, r in zip(spatial, ratios)), ()))
    return reshape(tr, spread, shape)


def pixel_shuffle(tr, x, factor, shape, inverse=False):
    """(…, C·r², H, W) ↔ (…, C, H·r, W·r) as torch defines it: a view, a permute, a view."""
    in_shape = tr.shape(x)
    lead, r = in_shape[:-3], int(factor)
    if inverse:
        c, h, w = in_shape[-3], in_shape[-2] // r, in_shape[-1] // r
        split, order = (c, h, r, w, r), (0, 2, 4, 1, 3)
    else:
        c, h, w = in_shape[-3] // (r * r), in_shape[-2], in_shape[-1]
        split, order = (c, r, r, h, w), (0, 3, 1, 4, 2)
    k = len(lead)
    viewed = reshape(tr, x, lead + split)
    perm = tuple(range(k)) + tuple(k + o for o in order)
    moved = tr.add("permute", [viewed], lead + tuple(split[o] for o in order), perm=perm)
    return reshape(tr, moved, shape)
