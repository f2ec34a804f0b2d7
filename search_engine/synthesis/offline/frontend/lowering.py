"""Lower the reference's ops beyond the first three families into the IR (`ir.py`).

Called by the tracer (`translator._Translator`) for every function, method or module it does not
translate itself. Composite ops become primitives the staged family knows:

- anchors with their own kernels: ``conv`` (1-D/2-D/3-D, stride, padding, dilation, groups,
  transposed), ``pool`` (max/avg), ``scan`` (cumsum/cumprod), ``matmul`` (any batch),
  ``attention`` (scaled dot-product), reductions (plus ``prod``);
- index ops inlined into the kernels that read them: ``reshape``, ``permute``, ``expand``,
  ``flip``, ``slice``, ``cat``, ``iota``;
- pointwise ``where`` and comparisons (as 0/1 values);
- norms (BatchNorm with running or batch statistics as the module uses them, GroupNorm,
  InstanceNorm), ``logsumexp``, losses (cross-entropy, KL, Huber/smooth-L1, MSE, L1,
  triplet margin, cosine similarity), ``einsum`` and ``bilinear`` as the primitives above.

This module dispatches a call or module to its lowering; the lowerings themselves live beside
it: index and layout ops in `lowering_index.py`, convolutions and pooling in
`lowering_conv_pool.py`, norms in `lowering_norms.py`, losses in `lowering_losses.py` (their
argument helpers in `lowering_args.py`).

This module runs in the sandbox only (the tracer runs the problem's code); what it builds is
re-checked by `plan.classify.analysis_from_json` in the caller's process.
"""

from __future__ import annotations

import math

import torch

from search_engine.synthesis.offline.frontend.builder import (
    _dims, _get_attr, _int, _norm_dims, _Uncovered,
)
from search_engine.synthesis.offline.frontend.ir import Const
from search_engine.synthesis.offline.frontend.lowering_args import const_float
from search_engine.synthesis.offline.frontend.lowering_conv_pool import (
    adaptive_pool, conv_function, conv_node, lp_pool, pad_function, padded_conv_input,
    pixel_shuffle, pool_function, pool_node, upsample,
)
from search_engine.synthesis.offline.frontend.lowering_index import (
    add_matmul, bilinear, cat, diag, einsum, getitem, matmul, multihead_attention, outer,
    reshape, select, triangle,
)
from search_engine.synthesis.offline.frontend.lowering_losses import LOSS_FUNCTIONS, loss_module
from search_engine.synthesis.offline.frontend.lowering_margin_losses import cosine, distance
from search_engine.synthesis.offline.frontend.lowering_norms import (
    NORM_FUNCTIONS, REDUCTION_FUNCTIONS, batch_norm, group_norm, instance_norm,
    local_response_norm, rms_norm, vector_norm,
)
from search_engine.synthesis.offline.frontend.lowering_transformer import transformer_encoder

# what the tracer (`translator._Translator`) calls
__all__ = ["function", "getitem", "is_traced_constant", "module", "traced_constant",
           "vector_norm"]

COMPARISONS = {"gt": "gt", "lt": "lt", "ge": "ge", "le": "le", "eq": "eq", "ne": "ne",
               "__gt__": "gt", "__lt__": "lt", "__ge__": "ge", "__le__": "le",
               "__eq__": "eq", "__ne__": "ne", "greater": "gt", "less": "lt"}
RESHAPES = ("reshape", "view", "flatten", "unsqueeze", "squeeze", "view_as", "reshape_as")
NEGATIONS = ("invert", "__invert__", "bitwise_not", "logical_not")


def _meta_dtype(arg):
    """The dtype shape propagation recorded for an fx argument (None for a non-tensor)."""
    meta = getattr(arg, "meta", {}).get("tensor_meta")
    return getattr(meta, "dtype", None)


# -- functions and methods ------------------------------------------------------------------

def function(tr, fx_node, name, args, get, shape):
    x = args[0] if args else tr.value(fx_node.kwargs.get("input"))
    if name == "getattr" and len(fx_node.args) == 2 and fx_node.args[1] in ("T", "mT"):
        rank = len(tr.shape(x))
        if fx_node.args[1] == "T" and rank != 2:
            raise _Uncovered("getattr (.T of a tensor that is not 2-D)")
        return tr.add("transpose", [x], shape)
    if name == "getattr" and fx_node.args[1] in ("values", "indices", "min", "max") \
            and isinstance(x, tuple):  # (values, indices) or aminmax's (min, max)
        return x[0 if fx_node.args[1] in ("values", "min") else 1]
    if name in COMPARISONS:
        return tr.add(COMPARISONS[name], [args[0], args[1]], shape)
    if name in NEGATIONS:  # a mask's `~mask` or logical_not: its zeros (masks are 0/1 values)
        if name != "logical_not" and _meta_dtype(fx_node.args[0]) != torch.bool:
            raise _Uncovered(f"{name} of an integer tensor")
        return tr.add("eq", [x, Const(0.0)], shape)
    if name in RESHAPES:
        return reshape(tr, x, shape)
    if name in ("permute",):
        return tr.transpose(fx_node, name, x, shape)
    if name in ("expand", "expand_as", "broadcast_to"):
        return tr.add("expand", [x], shape)
    if name in ("where",):
        return tr.add("where", [args[0], args[1], args[2]], shape)
    if name == "masked_fill":
        return tr.add("where", [args[1], get(2, "value"), x], shape)
    if name in ("flip",):
        dims = _norm_dims(_dims(get(1, "dims")), len(tr.shape(x)))
        return tr.add("flip", [x], shape, dims=dims)
    if name == "unfold" and fx_node.op == "call_method":  # Tensor.unfold(dim, size, step):
        # sliding windows as a new last dim (F.unfold, im2col, is another op: refused)
        dim = int(_int(get(1, "dimension"))) % len(tr.shape(x))
        return tr.add("unfold", [x], shape, dim=dim, size=int(_int(get(2, "size"))),
                      step=int(_int(get(3, "step"))))
    if name in ("cumsum", "cumprod"):
        dim = int(_int(get(1, "dim"))) % len(tr.shape(x))
        return tr.add("scan", [x], shape, mode=name[3:], dim=dim)
    if name == "logcumsumexp":
        dim = int(_int(get(1, "dim"))) % len(tr.shape(x))
        return tr.add("scan", [x], shape, mode="logsumexp", dim=dim)
    if name in ("softmin", "special_softmax", "special_log_softmax"):
        source = tr.unary("neg", x) if name == "softmin" else x
        return tr.softmax(source, _int(get(1, "dim")), log=name == "special_log_softmax")
    if name in ("cummax", "cummin"):  # (values, indices); fx's shape is the pair's
        shape = tr.shape(x)
        dim = int(_int(get(1, "dim"))) % len(shape)
        return (tr.add("scan", [x], shape, mode=name[3:], dim=dim),
                tr.add("scan", [x], shape, torch.int64, mode="arg" + name[3:], dim=dim))
    if name == "prod":
        return tr.reduce("prod", x, _norm_dims(_dims(get(1, "dim")), len(tr.shape(x))),
                         bool(get(2, "keepdim", False)))
    if name in ("logsumexp", "special_logsumexp"):
        return logsumexp(tr, x, get(1, "dim"), bool(get(2, "keepdim", False)))
    if name in ("tril", "triu"):
        return triangle(tr, x, name, int(_int(get(1, "diagonal", 0) or 0)))
    if name in ("diag", "diag_embed") and len(tr.shape(x)) == 1:
        return diag(tr, x)
    if name in FACTORIES:
        return factory(tr, fx_node, name, get, shape)
    if name == "cat" or name == "concat":
        return cat(tr, fx_node, shape)
    if name == "select":
        return select(tr, x, int(_int(get(1, "dim"))), int(_int(get(2, "index"))))
    if name == "narrow":
        dim, start, length = (int(_int(get(i, k))) for i, k in ((1, "dim"), (2, "start"),
                                                                (3, "length")))
        return tr.add("slice", [x], shape, dim=dim % len(tr.shape(x)), start=start, step=1)
    if name == "einsum":
        return einsum(tr, fx_node)
    if name == "bilinear":
        return bilinear(tr, args[0], args[1], args[2], get(3, "bias"))
    if name in ("mv", "dot", "vdot", "inner") and len(tr.shape(args[1])) == 1:
        return matmul(tr, args[0], args[1])
    if name in ("outer", "ger"):
        return outer(tr, args[0], args[1])
    if name in ("addmm", "addmv", "baddbmm", "addbmm"):
        return add_matmul(tr, args[0], args[1], args[2], const_float(get(3, "beta", 1.0)),
                          const_float(get(4, "alpha", 1.0)), summed_batch=name == "addbmm")
    if name in ("sign", "floor", "ceil", "round", "trunc", "erf"):
        return tr.add(name, [x], shape)
    if name == "softsign":
        return tr.add("div", [x, tr.add("add", [tr.unary("abs", x), Const(1.0)],
                                        tr.shape(x))], shape)
    if name == "scaled_dot_product_attention":
        return attention(tr, fx_node, args, get, shape)
    if name == "pad":
        return pad_function(tr, x, get, shape)
    if name == "interpolate":
        return upsample(tr, x, get(3, "mode", "nearest"), shape)
    if name in ("pixel_shuffle", "pixel_unshuffle"):
        return pixel_shuffle(tr, x, _int(get(1, "upscale_factor" if name == "pixel_shuffle"
                                             else "downscale_factor")), shape,
                             inverse=name == "pixel_unshuffle")
    if name.startswith("conv"):
        return conv_function(tr, fx_node, name, args, get, shape)
    if "pool" in name:
        return pool_function(tr, fx_node, name, x, get, shape)
    if name in REDUCTION_FUNCTIONS:
        return REDUCTION_FUNCTIONS[name](tr, fx_node, x, get, shape)
    if name in NORM_FUNCTIONS:
        return NORM_FUNCTIONS[name](tr, fx_node, x, get, shape)
    if name in LOSS_FUNCTIONS:
        return LOSS_FUNCTIONS[name](tr, fx_node, args, get)
    if name == "pairwise_distance":
        return distance(tr, args[0], args[1], const_float(get(2, "p", 2.0)),
                        const_float(get(3, "eps", 1e-6)), bool(_int(get(4, "keepdim", False))))
    if name == "cosine_similarity":
        return cosine(tr, args[0], args[1], int(_int(get(2, "dim", 1))),
                      const_float(get(3, "eps", 1e-8)))
    raise _Uncovered(name)


FACTORIES = ("zeros_like", "ones_like", "full_like", "zeros", "ones", "full", "new_zeros",
             "new_ones", "new_full", "arange")


def factory(tr, fx_node, name, get, shape):
    """A tensor the forward creates (``torch.full_like(x, 0.5)``, ``torch.arange(n)``) as
    `start + step * index` over its shape: computed where it is read, never stored."""
    if not shape:
        raise _Uncovered(f"{name} of a 0-d tensor")
    start, step = 0.0, 0.0
    if name == "arange":
        bounds = [get(i, key) for i, key in enumerate(("start", "end", "step"))]
        bounds = [b for b in bounds if b is not None]
        start = const_float(bounds[0]) if len(bounds) > 1 else 0.0
        step = const_float(bounds[2]) if len(bounds) > 2 else 1.0
    elif name.startswith("ones") or name.startswith("new_ones"):
        start = 1.0
    elif name in ("full_like", "full", "new_full"):
        fill = get(2 if name == "new_full" else 1, "fill_value")
        if not isinstance(fill, Const):
            raise _Uncovered(f"{name} with a tensor fill value")
        start = fill.value
    index = tr.add("iota", [], shape, dim=0)
    return tr.add("add", [tr.add("mul", [index, Const(step)], shape), Const(start)], shape)


def logsumexp(tr, x, dim, keepdim):
    in_shape = tr.shape(x)
    dims = _norm_dims(_dims(dim), len(in_shape))
    peak = tr.reduce("max", x, dims, True)
    total = tr.reduce("sum", tr.unary("exp", tr.binary("sub", x, peak, in_shape)), dims, True)
    out = tr.binary("add", tr.unary("log", total), peak, tr.shape(peak))
    if not keepdim:
        out = reshape(tr, out, tuple(s for d, s in enumerate(in_shape) if d not in dims))
    return out


def attention(tr, fx_node, args, get, shape):
    q, k, v = args[0], args[1], args[2]
    mask = get(3, "attn_mask")
    if const_float(get(4, "dropout_p", 0.0) or 0.0) != 0.0:
        raise _Uncovered("scaled_dot_product_attention (dropout)")
    if mask is not None and (not isinstance(mask, int) or len(tr.shape(mask)) < 2):
        raise _Uncovered("scaled_dot_product_attention (mask that is not a 2-D+ tensor)")
    scale = get(6, "scale")
    head = tr.shape(q)[-1]
    scale = 1.0 / math.sqrt(head) if scale is None else const_float(scale)
    causal = bool(_int(get(5, "is_causal", False)))
    # grouped-query attention: each k/v head serves `groups` consecutive query heads
    q_heads, kv_heads = tr.shape(q)[-3:-2], tr.shape(k)[-3:-2]
    groups = q_heads[0] // kv_heads[0] if bool(get(7, "enable_gqa", False)) and q_heads \
        and kv_heads and q_heads != kv_heads else 1
    extra = {"groups": groups} if groups > 1 else {}
    if mask is None:
        return tr.add("attention", [q, k, v], shape, scale=scale, causal=causal, **extra)
    # a bool mask keeps the scores where True; a float mask is added to them (the traced
    # dtype: a mask computed in forward is a float 0/1 expression in the IR)
    mask_node = fx_node.kwargs.get("attn_mask", fx_node.args[3] if len(fx_node.args) > 3
                                   else None)
    mask_meta = getattr(mask_node, "meta", {}).get("tensor_meta")
    mask_dtype = getattr(mask_meta, "dtype", tr.nodes[mask].dtype)
    return tr.add("attention", [q, k, v, mask], shape, scale=scale, causal=causal,
                  additive_mask=mask_dtype != torch.bool, **extra)


# -- modules --------------------------------------------------------------------------------

def module(tr, fx_node, sub, x, shape):
    nn = torch.nn
    path = fx_node.target
    kind = type(sub).__name__

    def param(name):
        tensor = getattr(sub, name, None)
        return tr.param(f"{path}.{name}", tensor) if isinstance(tensor, torch.Tensor) else None

    convs = {nn.Conv1d: 1, nn.Conv2d: 2, nn.Conv3d: 3, nn.ConvTranspose1d: 1,
             nn.ConvTranspose2d: 2, nn.ConvTranspose3d: 3}
    for cls, nd in convs.items():
        if type(sub) is cls:
            transposed = isinstance(sub, nn.modules.conv._ConvTransposeNd)
            padding = sub.padding
            if sub.padding_mode != "zeros":  # pad first (as torch does), then no padding
                x, padding = padded_conv_input(tr, x, sub), 0
            return conv_node(tr, x, param("weight"), param("bias"), nd, sub.stride,
                             padding, sub.dilation, sub.groups, transposed,
                             sub.output_padding if transposed else 0, shape)
    pools = {nn.MaxPool1d: ("max", 1), nn.MaxPool2d: ("max", 2), nn.MaxPool3d: ("max", 3),
             nn.AvgPool1d: ("avg", 1), nn.AvgPool2d: ("avg", 2), nn.AvgPool3d: ("avg", 3)}
    for cls, (mode, nd) in pools.items():
        if type(sub) is cls:
            if getattr(sub, "return_indices", False):
                raise _Uncovered(f"{kind} with indices")
            return pool_node(tr, x, mode, nd, sub.kernel_size, sub.stride, sub.padding,
                             getattr(sub, "dilation", 1), sub.ceil_mode,
                             getattr(sub, "count_include_pad", True),
                             getattr(sub, "divisor_override", None), shape)
    if isinstance(sub, nn.Upsample):  # UpsamplingNearest2d too
        return upsample(tr, x, sub.mode, shape)
    if isinstance(sub, (nn.PixelShuffle, nn.PixelUnshuffle)):
        inverse = isinstance(sub, nn.PixelUnshuffle)
        return pixel_shuffle(tr, x, sub.downscale_factor if inverse else sub.upscale_factor,
                             shape, inverse)
    lp_pools = {nn.LPPool1d: 1, nn.LPPool2d: 2, getattr(nn, "LPPool3d", None): 3}
    if type(sub) in lp_pools:
        return lp_pool(tr, x, lp_pools[type(sub)], sub.norm_type, sub.kernel_size, sub.stride,
                       sub.ceil_mode, shape)
    adaptive = {nn.AdaptiveAvgPool1d: ("avg", 1), nn.AdaptiveAvgPool2d: ("avg", 2),
                nn.AdaptiveAvgPool3d: ("avg", 3), nn.AdaptiveMaxPool1d: ("max", 1),
                nn.AdaptiveMaxPool2d: ("max", 2), nn.AdaptiveMaxPool3d: ("max", 3)}
    for cls, (mode, nd) in adaptive.items():
        if type(sub) is cls:
            return adaptive_pool(tr, x, mode, nd, sub.output_size, shape)
    if isinstance(sub, nn.modules.batchnorm._BatchNorm):
        batch_stats = sub.training or not sub.track_running_stats
        return batch_norm(tr, x, param("running_mean"), param("running_var"), param("weight"),
                          param("bias"), batch_stats, sub.eps)
    if type(sub).__name__ == "RMSNorm":  # torch >= 2.4
        return rms_norm(tr, x, sub.normalized_shape, param("weight"), sub.eps,
                        tr.nodes[x].dtype)
    if isinstance(sub, nn.LocalResponseNorm):
        return local_response_norm(tr, x, sub.size, sub.alpha, sub.beta, sub.k)
    if isinstance(sub, nn.Softmin):
        return tr.softmax(tr.unary("neg", x), sub.dim)
    if isinstance(sub, nn.GroupNorm):
        return group_norm(tr, x, sub.num_groups, param("weight"), param("bias"), sub.eps)
    if isinstance(sub, nn.modules.instancenorm._InstanceNorm):
        if sub.track_running_stats and not sub.training:
            raise _Uncovered(f"{kind} with running statistics")
        return instance_norm(tr, x, param("weight"), param("bias"), sub.eps)
    if isinstance(sub, nn.MultiheadAttention):
        return multihead_attention(tr, fx_node, sub, path)
    if isinstance(sub, (nn.TransformerEncoder, nn.TransformerEncoderLayer)):
        return transformer_encoder(tr, fx_node, sub, x, path)
    if isinstance(sub, nn.Bilinear):
        return bilinear(tr, x, tr.value(fx_node.args[1]), param("weight"), param("bias"))
    if isinstance(sub, nn.Flatten):
        return reshape(tr, x, shape)
    if isinstance(sub, nn.Softsign):
        return function(tr, fx_node, "softsign", [x], lambda *a: None, shape)
    loss = loss_module(tr, sub, [tr.value(a) for a in fx_node.args], param)
    if loss is not None:
        return loss
    raise _Uncovered(kind)


# -- constants the forward creates (``torch.tensor(0.5)``) ----------------------------------

def is_traced_constant(gm, target: str) -> bool:
    """fx stores tensors made inside forward as ``_tensor_constant*`` attributes of the traced
    module (not of the Model the candidate copies)."""
    return target.startswith("_tensor_constant")


def traced_constant(tr, fx_node):
    tensor = _get_attr(tr.gm, fx_node.target)
    if tensor.is_meta or tensor.numel() != 1:
        tr.uncovered.append("a tensor constant made in forward")
        return None
    return Const(float(tensor.reshape(()).item()))
