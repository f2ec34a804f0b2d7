"""Convolutions and pooling for the lowering (`lowering.py`): ``conv`` nodes (1-D/2-D/3-D,
stride, padding, dilation, groups, transposed) and ``pool`` nodes (max/avg, adaptive) from
``F.conv*``/``F.*pool*`` calls and their modules; global adaptive pooling is a reduction."""

from __future__ import annotations

from search_engine.synthesis.offline.analysis import _int, _Uncovered
from search_engine.synthesis.offline.lowering_args import int_tuple


def conv_node(tr, x, weight, bias, nd, stride, padding, dilation, groups, transposed,
              output_padding, shape):
    if isinstance(padding, str):
        if padding == "valid":
            padding = 0
        else:
            raise _Uncovered(f"conv padding={padding!r}")
    operands = [x, weight] + ([bias] if isinstance(bias, int) else [])
    return tr.add("conv", operands, shape, stride=int_tuple(stride, nd),
                  padding=int_tuple(padding, nd), dilation=int_tuple(dilation, nd),
                  output_padding=int_tuple(output_padding, nd),
                  groups=int(groups), transposed=bool(transposed))


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
    in_shape = tr.shape(x)
    spatial = in_shape[-nd:]
    out = int_tuple(output_size, nd)
    out = tuple(s if o is None else o for o, s in zip(out, spatial))
    if any(s % o for s, o in zip(spatial, out)):
        raise _Uncovered(f"adaptive_{mode}_pool (input not a multiple of the output)")
    kernel = tuple(s // o for s, o in zip(spatial, out))
    if all(o == 1 for o in out):  # global pooling is a reduction
        dims = tuple(range(len(in_shape) - nd, len(in_shape)))
        if mode == "avg":
            return tr.mean(x, dims, True)
        return tr.reduce("max", x, dims, True)
    return pool_node(tr, x, mode, nd, kernel, kernel, 0, 1, False, True, None, shape)


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
    if name.startswith("avg_pool"):
        return pool_node(tr, x, "avg", nd, get(1, "kernel_size"), get(2, "stride"),
                         get(3, "padding", 0), 1, _int(get(4, "ceil_mode", False)),
                         _int(get(5, "count_include_pad", True)),
                         get(6, "divisor_override") if nd > 1 else None, shape)
    raise _Uncovered(name)
