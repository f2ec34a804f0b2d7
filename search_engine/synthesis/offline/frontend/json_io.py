"""The op graph as JSON: written in the sandbox (`analysis_to_json`), checked strictly when
read back (`graph_from_json`; the plan classifies it again,
`plan.classify.analysis_from_json`).

The JSON may have been written by hostile code, so the reader accepts known ops, dtypes and
attributes only, identifiers only where names reach generated code, and references to
earlier nodes only; anything else raises `CoverageUnknown`.
"""

from __future__ import annotations

import re
from typing import Any

import torch

from search_engine.synthesis.base import NotCoveredError
from search_engine.synthesis.offline.frontend.ir import OPS, Analysis, Const, IRNode


class CoverageUnknown(NotCoveredError):
    """The sandboxed analysis gave no usable answer (timeout, memory, a crash, a malformed
    answer, no sandbox): coverage is unknown, not refused."""


DTYPE_NAMES = (
    "float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8",
    "bool", "complex64", "complex128", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
    "float8_e5m2fnuz", "uint16", "uint32", "uint64",
)
_FLOAT_ATTRS = ("beta", "threshold", "alpha", "slope", "lo", "hi", "exponent", "divisor",
                "scale", "lambd", "value")
_DIM_ATTRS = ("dims", "in_shape", "stride", "padding", "dilation", "output_padding", "kernel",
              "perm")
_BOOL_ATTRS = ("keepdim", "temp", "transposed", "ceil_mode", "count_include_pad", "causal",
               "scalar", "adaptive", "additive_mask", "column_sums", "reverse")
_INT_ATTRS = ("groups", "dim", "start", "step", "size")
_MODES = ("max", "avg", "sum", "prod", "min", "argmax", "argmin", "logsumexp",
          "constant", "reflect", "replicate", "circular",  # pad modes
          "lstm", "gru", "rnn_tanh", "rnn_relu")  # recurrences
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")
_PATH_PART = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}|[0-9]{1,6}")
_MAX_NODES = 20_000
_MAX_RANK = 16
_MAX_DIM = 1 << 48


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _dtype(name: Any) -> torch.dtype:
    if not isinstance(name, str) or name not in DTYPE_NAMES:
        raise _Malformed("an unknown dtype")
    value = getattr(torch, name, None)
    if not isinstance(value, torch.dtype):
        raise _Malformed(f"dtype {name} is not in this torch")
    return value


def analysis_to_json(an: Analysis) -> dict:
    """What the sandbox sends back: the pruned graph and the names; the family, rows and
    matmul fields are recomputed by the receiver (`analysis_from_json`)."""
    nodes = []
    for node in an.topo():
        operands = [{"const": a.value} if isinstance(a, Const) else a for a in node.operands]
        attrs = {k: (list(v) if isinstance(v, tuple) else v) for k, v in node.attrs.items()}
        nodes.append({"id": node.id, "op": node.op, "operands": operands, "attrs": attrs,
                      "shape": list(node.shape), "dtype": _dtype_name(node.dtype)})
    return {"nodes": nodes, "output": an.output, "input_count": an.input_count,
            "op_names": list(an.op_names), "input_names": list(an.input_names),
            "output_dtype": an.output_dtype}


def graph_from_json(data: Any) -> Analysis:
    """Rebuild the traced graph (family "traced") from the sandbox's JSON; raises
    CoverageUnknown when anything is out of shape (it may have been written by hostile code)."""
    try:
        if not isinstance(data, dict):
            raise _Malformed("not an object")
        raw_nodes = data.get("nodes")
        if not isinstance(raw_nodes, list) or not 0 < len(raw_nodes) <= _MAX_NODES:
            raise _Malformed("nodes")
        nodes: dict[int, IRNode] = {}
        for raw in raw_nodes:
            node = _node_from_json(raw, nodes)
            nodes[node.id] = node
        output = _int_field(data.get("output"), "output")
        if output not in nodes:
            raise _Malformed("output")
        input_count = _int_field(data.get("input_count"), "input_count", 4096)
        op_names = _str_list(data.get("op_names"), "op_names", 200, _MAX_NODES)
        input_names = _str_list(data.get("input_names"), "input_names", 100, 4096)
        if not all(_NAME.fullmatch(n) for n in input_names):
            raise _Malformed("input_names")
        output_dtype = data.get("output_dtype")
        if not isinstance(output_dtype, str) or not output_dtype.startswith("torch.") \
                or output_dtype[len("torch."):] not in DTYPE_NAMES:
            raise _Malformed("output_dtype")
        _dtype(output_dtype[len("torch."):])
    except _Malformed as exc:
        raise CoverageUnknown(f"coverage unknown: the sandbox's op graph is malformed "
                              f"({exc})") from None
    return Analysis("traced", nodes, output, input_count, op_names=op_names,
                    input_names=input_names, output_dtype=output_dtype)


def _node_from_json(raw: Any, earlier: dict[int, IRNode]) -> IRNode:
    if not isinstance(raw, dict):
        raise _Malformed("node")
    node_id = _int_field(raw.get("id"), "node id", _MAX_NODES * 8)
    if node_id in earlier or (earlier and node_id <= max(earlier)):
        raise _Malformed("node ids out of order")
    op = raw.get("op")
    if op not in OPS:
        raise _Malformed("an unknown op")
    operands: list[Any] = []
    raw_operands = raw.get("operands")
    if not isinstance(raw_operands, list) or len(raw_operands) > 8:
        raise _Malformed("operands")
    for operand in raw_operands:
        if isinstance(operand, dict) and set(operand) == {"const"}:
            operands.append(Const(_float(operand["const"], "const")))
        elif isinstance(operand, int) and not isinstance(operand, bool) and operand in earlier:
            operands.append(operand)
        else:
            raise _Malformed("operand (references only earlier nodes)")
    attrs = _attrs_from_json(raw.get("attrs"))
    return IRNode(node_id, op, operands, attrs, _shape(raw.get("shape")), _dtype(raw.get("dtype")))


def _attrs_from_json(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise _Malformed("attrs")
    attrs: dict[str, Any] = {}
    for key, value in raw.items():
        if key in _FLOAT_ATTRS:
            attrs[key] = None if value is None else _float(value, key)
        elif key in _DIM_ATTRS:
            attrs[key] = _shape(value)
        elif key in _BOOL_ATTRS:
            if not isinstance(value, bool):
                raise _Malformed(key)
            attrs[key] = value
        elif key in _INT_ATTRS:
            if not isinstance(value, int) or isinstance(value, bool) or \
                    not 0 <= value <= _MAX_DIM:
                raise _Malformed(key)
            attrs[key] = value
        elif key == "mode":
            if value not in _MODES:
                raise _Malformed("mode")
            attrs[key] = value
        elif key == "index":
            if not isinstance(value, int) or isinstance(value, bool) or not -1 <= value < 4096:
                raise _Malformed("index")
            attrs[key] = value
        elif key == "path":
            if not isinstance(value, str) or len(value) > 300 or \
                    not all(_PATH_PART.fullmatch(p) for p in value.split(".")):
                raise _Malformed("parameter path")
            attrs[key] = value
        else:
            raise _Malformed("an unknown attribute")
    return attrs


def _int_field(value: Any, what: str, limit: int = _MAX_NODES * 8) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= limit:
        raise _Malformed(what)
    return value


def _float(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Malformed(what)
    return float(value)


def _shape(value: Any) -> tuple[int, ...]:
    if not isinstance(value, list) or len(value) > _MAX_RANK or not all(
            isinstance(d, int) and not isinstance(d, bool) and 0 <= d <= _MAX_DIM
            for d in value):
        raise _Malformed("shape")
    return tuple(value)


def _str_list(value: Any, what: str, max_chars: int, max_items: int) -> list[str]:
    if not isinstance(value, list) or len(value) > max_items or not all(
            isinstance(v, str) and len(v) <= max_chars for v in value):
        raise _Malformed(what)
    return list(value)


class _Malformed(Exception):
    pass
