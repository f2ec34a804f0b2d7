"""nn.TransformerEncoderLayer and nn.TransformerEncoder (eval, no masks) as IR: self-attention
through `attention_block`, the residuals, LayerNorms (post- or pre-norm) and the ReLU or GELU
feed-forward, layer after layer, then the encoder's final norm."""

from __future__ import annotations

import torch.nn.functional as F
from torch import nn

from search_engine.synthesis.offline.frontend.builder import _Uncovered
from search_engine.synthesis.offline.frontend.lowering_index import attention_block, linear


def transformer_encoder(tr, fx_node, sub, x, path: str):
    if any(a is not None for a in fx_node.args[1:]) or any(
            v not in (None, False) for k, v in fx_node.kwargs.items() if k != "src"):
        raise _Uncovered(f"{type(sub).__name__} (masks)")
    if isinstance(sub, nn.TransformerEncoderLayer):
        return encoder_layer(tr, sub, x, path)
    for i, layer in enumerate(sub.layers):
        x = encoder_layer(tr, layer, x, f"{path}.layers.{i}")
    return x if sub.norm is None else _norm(tr, sub.norm, x, f"{path}.norm")


def encoder_layer(tr, layer, x, path: str):
    if not isinstance(layer, nn.TransformerEncoderLayer):
        raise _Uncovered(f"TransformerEncoder of {type(layer).__name__}")
    activation = _activation(layer.activation)

    def attend(h):
        return attention_block(tr, layer.self_attn, f"{path}.self_attn", h, h, h)

    def feed_forward(h):
        h = tr.unary(activation, _linear(tr, layer.linear1, h, f"{path}.linear1"))
        return _linear(tr, layer.linear2, h, f"{path}.linear2")

    def add(a, b):
        return tr.binary("add", a, b, tr.shape(a))

    if layer.norm_first:
        x = add(x, attend(_norm(tr, layer.norm1, x, f"{path}.norm1")))
        return add(x, feed_forward(_norm(tr, layer.norm2, x, f"{path}.norm2")))
    x = _norm(tr, layer.norm1, add(x, attend(x)), f"{path}.norm1")
    return _norm(tr, layer.norm2, add(x, feed_forward(x)), f"{path}.norm2")


def _activation(fn) -> str:
    if fn is F.relu or isinstance(fn, nn.ReLU):
        return "relu"
    if fn is F.gelu or (isinstance(fn, nn.GELU) and fn.approximate == "none"):
        return "gelu"
    raise _Uncovered("TransformerEncoderLayer (activation other than ReLU or GELU)")


def _linear(tr, sub, x, path: str):
    bias = tr.param(f"{path}.bias", sub.bias) if sub.bias is not None else None
    return linear(tr, x, tr.param(f"{path}.weight", sub.weight), bias)


def _norm(tr, sub, x, path: str):
    if not isinstance(sub, nn.LayerNorm):
        raise _Uncovered(f"TransformerEncoder norm {type(sub).__name__}")
    return tr.layer_norm_module(sub, x, path)
