"""Read a KernelBench reference `Model` with torch.fx into a small op graph (the IR).

Composite ops are expanded into primitives the templates know (softmax → max, sub, exp, sum,
div; layer norm → mean, var, rsqrt, ...), shapes come from `ShapeProp` on the problem's own
inputs, and the graph is classified into one family:

- ``elementwise``: a chain/DAG of pointwise ops over broadcastable tensors;
- ``rows``: pointwise ops plus reductions that all reduce the same contiguous dims;
- ``matmul``: one matmul/linear/bmm over inputs or parameters (optionally transposed),
  followed by an epilogue of pointwise ops and reductions.

Anything else raises `NotCoveredError` naming the ops that stopped it.

The problem is untrusted code: tracing it (which runs `Model`, `get_inputs`, the forward)
happens only inside the sandboxed probe (`search_engine.problem_probe --task analyze`, which
calls `trace_module`). This process gets the op graph back as JSON (`analysis_to_json`),
checks it strictly (`analysis_from_json`: known ops, dtypes and attributes, identifiers only
where names reach generated code, references to earlier nodes only) and classifies it again
itself, so the family is never taken on the child's word. `analyze` caches the probe's answer
per source hash, so a search (and the coverage check before it) probes once.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import torch

from search_engine.synthesis.base import NotCoveredError

UNARY = {
    "relu", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "abs", "neg", "gelu",
    "gelu_tanh", "silu", "softplus", "elu", "leaky_relu", "clamp", "square", "reciprocal",
    "sin", "cos", "hardsigmoid", "hardswish", "mish", "selu", "powc", "log1p", "expm1",
}
BINARY = {"add", "sub", "mul", "div", "maximum", "minimum"}
REDUCTIONS = {"sum", "max", "min", "argmax", "argmin"}
LEAVES = {"input", "param"}


@dataclass(frozen=True)
class Const:
    value: float


@dataclass
class IRNode:
    id: int
    op: str
    operands: list[Any] = field(default_factory=list)  # int (node id) or Const
    attrs: dict[str, Any] = field(default_factory=dict)
    shape: tuple[int, ...] = ()
    dtype: torch.dtype = torch.float32

    def refs(self) -> list[int]:
        return [a for a in self.operands if isinstance(a, int)]


@dataclass
class Analysis:
    family: str  # elementwise | rows | matmul
    nodes: dict[int, IRNode]
    output: int
    input_count: int
    reduce_dims: tuple[int, ...] = ()  # for rows: the reduced dims of `row_shape`
    row_shape: tuple[int, ...] = ()  # the shape the reductions read
    matmul: int | None = None
    op_names: list[str] = field(default_factory=list)  # the reference's ops, for origin
    input_names: list[str] = field(default_factory=list)  # forward's argument names
    output_dtype: str = "torch.float32"
    materialized_bytes: int = 0  # real tensor data the sandboxed tracing held (meta: 0)

    def topo(self) -> list[IRNode]:
        return [self.nodes[i] for i in sorted(self.nodes)]

    def users(self, node_id: int) -> list[int]:
        return [n.id for n in self.nodes.values() if node_id in n.refs()]


ANALYZE_TIMEOUT_S = 120.0
ANALYZE_MEMORY_BYTES = 4 << 30


class CoverageUnknown(NotCoveredError):
    """The sandboxed analysis gave no usable answer (timeout, memory, a crash, a malformed
    answer, no sandbox): coverage is unknown, not refused."""


def analyze(problem_source: str, *, timeout_s: float = ANALYZE_TIMEOUT_S,
            memory_bytes: int = ANALYZE_MEMORY_BYTES) -> Analysis:
    """The problem's op graph, traced in the sandbox; NotCoveredError when not covered."""
    payload = _probe_analysis(problem_source, timeout_s, memory_bytes)
    if not payload["covered"]:
        raise NotCoveredError(payload["message"], payload["ops"])
    analysis = analysis_from_json(payload["analysis"])
    analysis.materialized_bytes = payload.get("materialized_bytes", 0)
    return analysis


_PROBED: OrderedDict[str, dict] = OrderedDict()  # source sha256 -> checked probe payload
_PROBED_LOCK = threading.Lock()
_PROBED_MAX = 256


def _probe_analysis(problem_source: str, timeout_s: float, memory_bytes: int) -> dict:
    from search_engine.problem_probe import ProbeFailed, error_text, run_probe

    key = hashlib.sha256(problem_source.encode()).hexdigest()
    with _PROBED_LOCK:
        if key in _PROBED:
            _PROBED.move_to_end(key)
            return _PROBED[key]
    try:
        payload = run_probe(problem_source, "analyze", timeout_s=timeout_s,
                            memory_bytes=memory_bytes).payload
        if not payload["ok"]:
            raise CoverageUnknown(f"coverage unknown: the problem failed while being "
                                  f"analyzed: {error_text(payload)}")
        checked = _check_payload(payload)
    except ProbeFailed as exc:
        raise CoverageUnknown(f"coverage unknown: the sandboxed analysis {exc}") from None
    with _PROBED_LOCK:
        _PROBED[key] = checked
        while len(_PROBED) > _PROBED_MAX:
            _PROBED.popitem(last=False)
    return checked


def _check_payload(payload: dict) -> dict:
    covered = payload.get("covered")
    if covered is True:
        try:
            analysis_from_json(payload.get("analysis"))  # CoverageUnknown when malformed
        except CoverageUnknown:
            raise
        except NotCoveredError:
            pass  # well-formed; `analyze` refuses it on every call, without probing again
        held = payload.get("materialized_bytes", 0)
        if not isinstance(held, int) or isinstance(held, bool) or held < 0:
            raise CoverageUnknown("coverage unknown: the sandbox's answer is malformed")
        return {"covered": True, "analysis": payload["analysis"], "materialized_bytes": held}
    if covered is False:
        message, ops = payload.get("message"), payload.get("ops")
        if not isinstance(message, str) or not isinstance(ops, list) \
                or not all(isinstance(o, str) for o in ops) or len(ops) > 1000:
            raise CoverageUnknown("coverage unknown: the sandbox's answer is malformed")
        return {"covered": False, "message": _clip(message, 2000),
                "ops": [_clip(o, 200) for o in ops]}
    raise CoverageUnknown("coverage unknown: the sandbox's answer is malformed")


def trace_module(module) -> Analysis:
    """Trace a loaded problem module. This RUNS the problem's code: only the sandboxed probe
    (`search_engine.problem_probe`) calls it.

    The model and its inputs are built on the meta device (shapes and dtypes, no storage), so
    an official-size problem costs no memory; `materialized_bytes` on the result says how much
    real tensor data the analysis held (0 unless the problem forced real tensors)."""
    import torch.fx
    from torch.fx.passes.shape_prop import ShapeProp

    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, name):
            raise NotCoveredError(f"the problem does not define {name}")
    torch.manual_seed(0)
    model, inputs = _build_on_meta(module)
    try:
        graph_module = torch.fx.symbolic_trace(model)
    except Exception as exc:  # data-dependent control flow and the like
        raise NotCoveredError(f"torch.fx could not trace the reference Model: {exc}") from exc
    try:
        with torch.no_grad():
            ShapeProp(graph_module).propagate(*inputs)
    except Exception as exc:
        raise NotCoveredError(f"the reference Model did not run on get_inputs(): "
                              f"{type(exc).__name__}: {exc}") from exc
    analysis = _Translator(graph_module, len(inputs), inputs).run()
    analysis.materialized_bytes = _real_bytes(model, inputs)
    return analysis


def _build_on_meta(module):
    """The Model and get_inputs() with every factory call on the meta device; `.cuda()` and
    `.to(device)` keep meta tensors on meta (the analysis needs shapes, never values)."""
    originals = {name: getattr(torch.Tensor, name) for name in ("cuda", "to", "cpu")}

    def stay_on_meta(name):
        def call(self, *args, **kwargs):
            if self.is_meta:
                dtype = next((a for a in args if isinstance(a, torch.dtype)), kwargs.get("dtype"))
                return self if dtype is None else originals["to"](self, dtype=dtype)
            return originals[name](self, *args, **kwargs)
        return call

    try:
        for name in originals:
            setattr(torch.Tensor, name, stay_on_meta(name))
        with torch.device("meta"):
            model = module.Model(*module.get_init_inputs())
            inputs = list(module.get_inputs())
    finally:
        for name, fn in originals.items():
            setattr(torch.Tensor, name, fn)
    if isinstance(model, torch.nn.Module):
        model.eval()  # as the evaluator runs the reference
    return model, inputs


def _real_bytes(model, inputs) -> int:
    tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
    if isinstance(model, torch.nn.Module):
        tensors += list(model.parameters()) + list(model.buffers())
    return int(sum(t.numel() * t.element_size() for t in tensors if not t.is_meta))


# --- the op graph as JSON (written in the sandbox, checked here) -------------------------------

DTYPE_NAMES = (
    "float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8",
    "bool", "complex64", "complex128", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
    "float8_e5m2fnuz", "uint16", "uint32", "uint64",
)
# ops only the staged family (staged.py) renders; a graph with any of them is staged
STAGED_OPS = {"conv", "pool", "scan", "attention", "prod", "reshape", "permute", "expand",
              "flip", "slice", "cat", "iota", "where", "gt", "lt", "ge", "le", "eq", "ne",
              "sign", "floor", "ceil", "round", "trunc", "erf"}
OPS = UNARY | BINARY | REDUCTIONS | LEAVES | {"matmul", "transpose"} | STAGED_OPS
FAMILIES = ("elementwise", "rows", "matmul")
_FLOAT_ATTRS = ("beta", "threshold", "alpha", "slope", "lo", "hi", "exponent", "divisor",
                "scale")
_DIM_ATTRS = ("dims", "in_shape", "stride", "padding", "dilation", "output_padding", "kernel",
              "perm")
_BOOL_ATTRS = ("keepdim", "temp", "transposed", "ceil_mode", "count_include_pad", "causal",
               "scalar")
_INT_ATTRS = ("groups", "dim", "start", "step")
_MODES = ("max", "avg", "sum", "prod")
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


def analysis_from_json(data: Any) -> Analysis:
    """Rebuild and classify an `Analysis` from the sandbox's JSON; raises CoverageUnknown
    when anything is out of shape (it may have been written by hostile code), and
    NotCoveredError when the graph does not fit a family."""
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
    try:
        return classify(nodes, output, input_count, op_names, input_names, output_dtype)
    except NotCoveredError:
        raise
    except Exception as exc:  # a well-typed but inconsistent graph (missing attrs, ...)
        raise CoverageUnknown(f"coverage unknown: the sandbox's op graph is inconsistent "
                              f"({type(exc).__name__})") from None


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


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _Malformed(Exception):
    pass


def _node_name(fx_node) -> str:
    target = fx_node.target
    if fx_node.op == "call_method":
        return str(target)
    if fx_node.op == "call_function":
        return getattr(target, "__name__", str(target))
    return str(target)


def _arg(fx_node, pos: int, name: str, default=None):
    if len(fx_node.args) > pos:
        return fx_node.args[pos]
    return fx_node.kwargs.get(name, default)


class _Translator:
    def __init__(self, graph_module, input_count: int, inputs=()):
        self.gm = graph_module
        self.input_count = input_count
        self.inputs = list(inputs)
        self.nodes: dict[int, IRNode] = {}
        self.env: dict[str, Any] = {}  # fx node name -> IR id (or tuple for max(dim=...))
        self.uncovered: list[str] = []
        self.op_names: list[str] = []
        self.input_names: list[str] = []
        self.output_dtype = "torch.float32"

    # -- building blocks -------------------------------------------------------------
    def add(self, op, operands, shape, dtype=torch.float32, **attrs) -> int:
        node_id = len(self.nodes)
        self.nodes[node_id] = IRNode(node_id, op, list(operands), attrs, tuple(shape), dtype)
        return node_id

    def shape(self, ref) -> tuple[int, ...]:
        return self.nodes[ref].shape if isinstance(ref, int) else ()

    def value(self, arg):
        if hasattr(arg, "op") and hasattr(arg, "name"):  # an fx Node
            return self.env[arg.name]
        if isinstance(arg, bool) or arg is None:
            return arg
        if isinstance(arg, (int, float)):
            return Const(float(arg))
        return arg

    def binary(self, op, a, b, shape):
        return self.add(op, [a, b], shape)

    def unary(self, op, x, shape=None, **attrs):
        return self.add(op, [x], shape if shape is not None else self.shape(x), **attrs)

    def reduce(self, kind, x, dims, keepdim):
        in_shape = self.shape(x)
        dims = _norm_dims(dims, len(in_shape))
        out = [1 if d in dims else s for d, s in enumerate(in_shape)]
        if not keepdim:
            out = [s for d, s in enumerate(in_shape) if d not in dims]
        dtype = torch.int64 if kind in ("argmax", "argmin") else torch.float32
        return self.add(kind, [x], out, dtype, dims=dims, keepdim=keepdim,
                        in_shape=tuple(in_shape))

    def mean(self, x, dims, keepdim):
        in_shape = self.shape(x)
        dims = _norm_dims(dims, len(in_shape))
        count = math.prod(in_shape[d] for d in dims)
        total = self.reduce("sum", x, dims, keepdim)
        return self.binary("div", total, Const(float(count)), self.shape(total))

    def var(self, x, dims, keepdim, correction=1.0):
        in_shape = self.shape(x)
        dims = _norm_dims(dims, len(in_shape))
        count = math.prod(in_shape[d] for d in dims)
        mu = self.mean(x, dims, True)
        centered = self.binary("sub", x, mu, in_shape)
        sq = self.unary("square", centered)
        total = self.reduce("sum", sq, dims, keepdim)
        return self.binary("div", total, Const(float(max(count - correction, 1))),
                           self.shape(total))

    # -- translation -------------------------------------------------------------------
    def run(self) -> Analysis:
        placeholder_index = 0
        output_ref = None
        for fx_node in self.gm.graph.nodes:
            meta = fx_node.meta.get("tensor_meta")
            shape = tuple(meta.shape) if meta is not None and hasattr(meta, "shape") else ()
            if fx_node.op == "placeholder":
                self.input_names.append(str(fx_node.target))
                dtype = meta.dtype if meta is not None and hasattr(meta, "dtype") else None
                value = self.inputs[placeholder_index] \
                    if placeholder_index < len(self.inputs) else None
                if dtype is None and isinstance(value, (int, float)) \
                        and not isinstance(value, bool):  # a scalar argument, passed as is
                    self.env[fx_node.name] = self.add("input", [], (), torch.float32,
                                                      index=placeholder_index, scalar=True)
                elif dtype is None:
                    self.uncovered.append(f"non-tensor input {fx_node.name}")
                    self.env[fx_node.name] = None
                else:
                    self.env[fx_node.name] = self.add("input", [], shape, dtype,
                                                      index=placeholder_index)
                placeholder_index += 1
            elif fx_node.op == "get_attr" and lowering.is_traced_constant(
                    self.gm, fx_node.target):
                self.env[fx_node.name] = lowering.traced_constant(self, fx_node)
            elif fx_node.op == "get_attr":
                tensor = _get_attr(self.gm, fx_node.target)
                self.env[fx_node.name] = self.add("param", [], tuple(tensor.shape),
                                                  tensor.dtype, path=fx_node.target)
            elif fx_node.op == "output":
                output_ref = fx_node.args[0]
                out_meta = getattr(output_ref, "meta", {}).get("tensor_meta")
                self.output_dtype = str(getattr(out_meta, "dtype", torch.float32))
            else:
                name = _node_name(fx_node)
                self.op_names.append(name)
                if self._downstream_of_uncovered(fx_node):
                    self.env[fx_node.name] = None  # its input already stopped the analysis
                    continue
                try:
                    self.env[fx_node.name] = self.translate(fx_node, name, shape)
                except _Uncovered as exc:
                    self.uncovered.append(str(exc))
                    self.env[fx_node.name] = None
                except Exception as exc:  # an argument form the lowering does not know
                    self.uncovered.append(f"{name} ({type(exc).__name__})")
                    self.env[fx_node.name] = None
        if self.uncovered:
            raise NotCoveredError(
                "the offline synthesizer does not cover this problem", self.uncovered)
        if not (hasattr(output_ref, "name") and isinstance(self.env.get(output_ref.name), int)):
            raise NotCoveredError("the offline synthesizer covers one tensor output only",
                                  ["multiple outputs"])
        return classify(self.nodes, self.env[output_ref.name], self.input_count,
                        self.op_names, self.input_names, self.output_dtype)

    def _downstream_of_uncovered(self, fx_node) -> bool:
        return any(self.env.get(n.name, 0) is None for n in fx_node.all_input_nodes)

    def translate(self, fx_node, name: str, shape):
        if fx_node.op == "call_module":
            return self.translate_module(fx_node, shape)
        args = [self.value(a) for a in fx_node.args]
        x = args[0] if args else self.value(fx_node.kwargs.get("input"))

        def get(pos, key, default=None):
            return self.value(_arg(fx_node, pos, key, default))

        aliases = {"__add__": "add", "iadd": "add", "__radd__": "add",
                   "__mul__": "mul",
                   "truediv": "div", "true_divide": "div", "divide": "div", "multiply": "mul",
                   "subtract": "sub", "negative": "neg", "__matmul__": "matmul",
                   "relu_": "relu", "clip": "clamp", "clamp_min": "clamp_min",
                   "maximum": "maximum", "minimum": "minimum", "amax": "amax", "amin": "amin"}
        name = aliases.get(name, name)
        if name in ("add", "sub", "mul", "div"):
            a, b = args[0], args[1]
            if fx_node.kwargs.get("alpha") not in (None, 1):
                b = self.binary("mul", b, Const(float(fx_node.kwargs["alpha"])), self.shape(b)) \
                    if isinstance(b, int) else Const(b.value * fx_node.kwargs["alpha"])
            if fx_node.kwargs.get("rounding_mode") is not None:
                raise _Uncovered(f"{name}(rounding_mode)")
            return self.binary(name, a, b, shape)
        if name == "rsub":
            return self.binary("sub", args[1], args[0], shape)
        if name in ("maximum", "minimum", "fmax", "fmin"):
            return self.binary({"fmax": "maximum", "fmin": "minimum"}.get(name, name),
                               args[0], args[1], shape)
        if name in ("neg", "relu", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "abs",
                    "square", "reciprocal", "sin", "cos", "silu", "mish", "selu", "log1p",
                    "expm1", "hardswish", "hardsigmoid"):
            return self.unary(name, x)
        if name == "gelu":
            approximate = fx_node.kwargs.get("approximate", _arg(fx_node, 1, "approximate"))
            return self.unary("gelu_tanh" if approximate == "tanh" else "gelu", x)
        if name == "softplus":
            return self.unary("softplus", x, beta=_f(get(1, "beta", 1.0)),
                              threshold=_f(get(2, "threshold", 20.0)))
        if name == "elu":
            return self.unary("elu", x, alpha=_f(get(1, "alpha", 1.0)))
        if name == "leaky_relu":
            return self.unary("leaky_relu", x, slope=_f(get(1, "negative_slope", 0.01)))
        if name in ("clamp", "hardtanh", "clamp_min", "clamp_max", "relu6"):
            lo, hi = {
                "clamp": (get(1, "min"), get(2, "max")),
                "hardtanh": (get(1, "min_val", -1.0), get(2, "max_val", 1.0)),
                "clamp_min": (get(1, "min"), None),
                "clamp_max": (None, get(1, "max")),
                "relu6": (Const(0.0), Const(6.0)),
            }[name]
            if isinstance(lo, int) or isinstance(hi, int):
                raise _Uncovered(f"{name} with tensor bounds")
            return self.unary("clamp", x, lo=_f(lo), hi=_f(hi))
        if name in ("pow", "__pow__"):
            if not isinstance(args[1], Const):
                raise _Uncovered("pow with a tensor exponent")
            return self.unary("powc", x, exponent=args[1].value)
        if name in ("softmax", "log_softmax", "_softmax"):
            dim = get(1, "dim")
            return self.softmax(x, _int(dim), log=name == "log_softmax")
        if name in ("sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "norm",
                    "var", "std"):
            return self.reduction_call(fx_node, name, x, args, get)
        if name == "getattr" and len(fx_node.args) == 2 and fx_node.args[1] == "shape":
            return _Shape(self.shape(args[0]))  # static: the problem's sizes are fixed
        if name == "size" and isinstance(args[0], int):
            dim = get(1, "dim")
            shape = _Shape(self.shape(args[0]))
            return shape if dim is None else Const(float(shape[_int(dim)]))
        if name == "getitem" and isinstance(self.env.get(fx_node.args[0].name), _Shape):
            picked = self.env[fx_node.args[0].name][fx_node.args[1]]
            return _Shape(picked) if isinstance(picked, tuple) else Const(float(picked))
        if name == "getitem":
            base, index = fx_node.args[0], fx_node.args[1]
            pair = self.env.get(base.name)
            if isinstance(pair, tuple) and index in (0, 1):
                return pair[index]
            return lowering.getitem(self, fx_node)
        if name == "layer_norm":
            normalized = get(1, "normalized_shape")
            return self.layer_norm(x, normalized, get(2, "weight"), get(3, "bias"),
                                   _f(get(4, "eps", 1e-5)))
        if name in ("matmul", "mm", "bmm"):
            return self.add("matmul", [args[0], args[1]], shape)
        if name == "linear":
            weight = args[1]
            bias = get(2, "bias")
            w_t = self.add("transpose", [weight], tuple(reversed(self.shape(weight))))
            out = self.add("matmul", [x, w_t], shape)
            return self.binary("add", out, bias, shape) if isinstance(bias, int) else out
        if name in ("t", "transpose", "permute", "swapaxes") or name == "mT":
            return self.transpose(fx_node, name, x, shape)
        if name in ("contiguous", "clone", "float", "detach", "dropout", "identity"):
            if name == "dropout" and fx_node.kwargs.get("training", False):
                raise _Uncovered("dropout in training mode")
            return x
        return lowering.function(self, fx_node, name, args, get, shape)

    def translate_module(self, fx_node, shape):
        sub = self.gm.get_submodule(fx_node.target)
        kind = type(sub).__name__
        x = self.value(fx_node.args[0]) if fx_node.args else None
        if x is None:
            raise _Uncovered(kind)
        path = fx_node.target
        nn = torch.nn
        simple = {nn.ReLU: "relu", nn.Sigmoid: "sigmoid", nn.Tanh: "tanh", nn.SiLU: "silu",
                  nn.Mish: "mish", nn.SELU: "selu", nn.Hardswish: "hardswish",
                  nn.Hardsigmoid: "hardsigmoid"}
        for cls, op in simple.items():
            if isinstance(sub, cls):
                return self.unary(op, x)
        if isinstance(sub, (nn.Identity, nn.Dropout)):
            return x
        if isinstance(sub, nn.GELU):
            return self.unary("gelu_tanh" if sub.approximate == "tanh" else "gelu", x)
        if isinstance(sub, nn.LeakyReLU):
            return self.unary("leaky_relu", x, slope=float(sub.negative_slope))
        if isinstance(sub, nn.ELU):
            return self.unary("elu", x, alpha=float(sub.alpha))
        if isinstance(sub, nn.Softplus):
            return self.unary("softplus", x, beta=float(sub.beta), threshold=float(sub.threshold))
        if isinstance(sub, nn.Hardtanh):  # ReLU6 too
            return self.unary("clamp", x, lo=float(sub.min_val), hi=float(sub.max_val))
        if isinstance(sub, (nn.Softmax, nn.LogSoftmax)):
            return self.softmax(x, sub.dim, log=isinstance(sub, nn.LogSoftmax))
        if isinstance(sub, nn.LayerNorm):
            weight = self.param(f"{path}.weight", sub.weight) if sub.weight is not None else None
            bias = self.param(f"{path}.bias", sub.bias) if sub.bias is not None else None
            return self.layer_norm(x, sub.normalized_shape, weight, bias, float(sub.eps))
        if isinstance(sub, nn.Linear):
            weight = self.param(f"{path}.weight", sub.weight)
            w_t = self.add("transpose", [weight], tuple(reversed(sub.weight.shape)))
            out = self.add("matmul", [x, w_t], shape)
            if sub.bias is not None:
                out = self.binary("add", out, self.param(f"{path}.bias", sub.bias), shape)
            return out
        return lowering.module(self, fx_node, sub, x, shape)

    def param(self, path, tensor) -> int:
        return self.add("param", [], tuple(tensor.shape), tensor.dtype, path=path)

    def softmax(self, x, dim, log=False):
        if dim is None:
            raise _Uncovered("softmax without dim")
        in_shape = self.shape(x)
        dims = _norm_dims(dim, len(in_shape))
        peak = self.reduce("max", x, dims, True)
        shifted = self.binary("sub", x, peak, in_shape)
        ex = self.unary("exp", shifted)
        total = self.reduce("sum", ex, dims, True)
        if log:
            return self.binary("sub", shifted, self.unary("log", total), in_shape)
        return self.binary("div", ex, total, in_shape)

    def layer_norm(self, x, normalized_shape, weight, bias, eps):
        in_shape = self.shape(x)
        count = len(tuple(normalized_shape)) if not isinstance(normalized_shape, int) else 1
        dims = tuple(range(len(in_shape) - count, len(in_shape)))
        mu = self.mean(x, dims, True)
        centered = self.binary("sub", x, mu, in_shape)
        variance = self.mean(self.unary("square", centered), dims, True)
        inv = self.unary("rsqrt", self.binary("add", variance, Const(eps), self.shape(variance)))
        out = self.binary("mul", centered, inv, in_shape)
        if isinstance(weight, int):
            out = self.binary("mul", out, weight, in_shape)
        if isinstance(bias, int):
            out = self.binary("add", out, bias, in_shape)
        return out

    def reduction_call(self, fx_node, name, x, args, get):
        in_shape = self.shape(x)
        if name in ("max", "min") and len(args) > 1 and (
                isinstance(args[1], int) or hasattr(fx_node.args[1], "op")):
            return self.binary("maximum" if name == "max" else "minimum", args[0], args[1],
                               self.shape(args[0]))
        if name == "norm":
            p = get(1, "p", "fro")
            dims = get(2, "dim")
            keepdim = bool(get(3, "keepdim", False))
            p = p.value if isinstance(p, Const) else p
            dims = _norm_dims(_dims(dims), len(in_shape))
            if p in ("fro", 2, 2.0):
                return self.unary("sqrt", self.reduce("sum", self.unary("square", x), dims,
                                                      keepdim))
            if p in (1, 1.0):
                return self.reduce("sum", self.unary("abs", x), dims, keepdim)
            if p == float("inf"):
                return self.reduce("max", self.unary("abs", x), dims, keepdim)
            raise _Uncovered(f"norm(p={p})")
        dim = get(1, "dim")
        keepdim = bool(get(2, "keepdim", False))
        if name in ("var", "std"):
            correction = fx_node.kwargs.get("correction")
            unbiased = fx_node.kwargs.get("unbiased", True)
            if correction is None:
                correction = 1.0 if unbiased else 0.0
            out = self.var(x, _norm_dims(_dims(dim), len(in_shape)), keepdim, float(correction))
            return self.unary("sqrt", out) if name == "std" else out
        dims = _norm_dims(_dims(dim), len(in_shape))
        if name == "mean":
            return self.mean(x, dims, keepdim)
        if name in ("sum", "amax", "amin"):
            return self.reduce({"amax": "max", "amin": "min"}.get(name, name), x, dims, keepdim)
        if name in ("argmax", "argmin"):
            if dim is None:
                raise _Uncovered(f"{name} without dim")
            return self.reduce(name, x, dims, keepdim)
        # max/min: with a dim they return (values, indices)
        if dim is None:
            return self.reduce(name, x, dims, False)
        values = self.reduce(name, x, dims, keepdim)
        indices = self.reduce("arg" + name, x, dims, keepdim)
        return (values, indices)

    def transpose(self, fx_node, name, x, shape):
        rank = len(self.shape(x))
        if name == "permute":
            order = list(fx_node.args[1:]) if not isinstance(fx_node.args[1], (list, tuple)) \
                else list(fx_node.args[1])
            order = [o % rank for o in order]
            if order != list(range(rank - 2)) + [rank - 1, rank - 2]:
                return self.add("permute", [x], shape, perm=tuple(order))
        elif name in ("transpose", "swapaxes"):
            d0, d1 = sorted(_int(a) % rank for a in fx_node.args[1:3])
            if (d0, d1) != (rank - 2, rank - 1):
                order = list(range(rank))
                order[d0], order[d1] = d1, d0
                return self.add("permute", [x], shape, perm=tuple(order))
        return self.add("transpose", [x], shape)


class _Uncovered(Exception):
    pass


class _Shape(tuple):
    """A static shape (x.shape, x.size()) flowing through the traced graph."""


def _f(value) -> float | None:
    if value is None:
        return None
    return float(value.value if isinstance(value, Const) else value)


def _int(value):
    return int(value.value) if isinstance(value, Const) else value


def _dims(dim):
    if dim is None or isinstance(dim, (list, tuple)):
        return dim
    return _int(dim)


def _norm_dims(dims, rank: int) -> tuple[int, ...]:
    if dims is None:
        return tuple(range(rank))
    if isinstance(dims, Const):
        dims = int(dims.value)
    if isinstance(dims, int):
        dims = (dims,)
    return tuple(sorted({int(_int(d)) % rank for d in dims}))


def _get_attr(module, target: str):
    obj = module
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def classify(all_nodes: dict[int, IRNode], output: int, input_count: int,
             op_names: list[str], input_names: list[str], output_dtype: str) -> Analysis:
    """The family of the graph that computes `output` (pure: no problem code runs)."""
    nodes = _prune(all_nodes, output)
    from search_engine.synthesis.offline import staged

    if staged.needs_staging(nodes):
        return staged.classify(nodes, output, input_count, op_names, input_names, output_dtype)
    try:
        return _classify_fused(nodes, output, input_count, op_names, input_names, output_dtype)
    except NotCoveredError as refused:  # beyond one fused kernel: a pipeline of stages
        return staged.classify(nodes, output, input_count, op_names, input_names,
                               output_dtype, refused)


def _classify_fused(nodes, output, input_count, op_names, input_names, output_dtype):
    matmuls = [n for n in nodes.values() if n.op == "matmul"]
    reductions = [n for n in nodes.values() if n.op in REDUCTIONS]
    analysis = Analysis("elementwise", nodes, output, input_count, op_names=op_names,
                        input_names=input_names, output_dtype=output_dtype)
    if len(matmuls) > 1:
        raise NotCoveredError("the offline synthesizer fuses one matmul per problem",
                              ["matmul (more than one)"])
    if matmuls:
        analysis.family = "matmul"
        analysis.matmul = matmuls[0].id
        _check_matmul(analysis)
        return analysis
    if any(n.op == "transpose" for n in nodes.values()):
        raise NotCoveredError("a transpose outside a matmul operand is not covered",
                              ["transpose"])
    if reductions:
        analysis.family = "rows"
        _check_rows(analysis, list(nodes))
    return analysis


def _prune(nodes: dict[int, IRNode], output: int) -> dict[int, IRNode]:
    keep, stack = set(), [output]
    while stack:
        node_id = stack.pop()
        if node_id in keep:
            continue
        keep.add(node_id)
        stack.extend(nodes[node_id].refs())
    return {i: nodes[i] for i in sorted(keep)}


def check_rows(analysis: Analysis, ids: list[int]) -> None:
    _check_rows(analysis, ids)


def _check_rows(analysis: Analysis, ids: list[int]) -> None:
    """All reductions read one shape over the same dims; reduced values broadcast per row."""
    nodes = analysis.nodes
    reductions = [nodes[i] for i in ids if nodes[i].op in REDUCTIONS]
    row_shape = reductions[0].attrs["in_shape"]
    dims = reductions[0].attrs["dims"]
    for red in reductions:
        if red.attrs["in_shape"] != row_shape or red.attrs["dims"] != dims:
            raise NotCoveredError("reductions over different shapes or dims are not covered",
                                  [red.op])
        if dims != tuple(range(dims[0], dims[-1] + 1)):
            raise NotCoveredError("reductions over non-adjacent dims are not covered", [red.op])
    analysis.row_shape, analysis.reduce_dims = tuple(row_shape), tuple(dims)
    level = {}  # "full" or "row" (one value per row)
    rank = len(row_shape)
    for node_id in ids:
        node = nodes[node_id]
        if node.op in LEAVES:
            level[node_id] = "leaf"
            continue
        if node.op in REDUCTIONS:
            if level[node.refs()[0]] == "row":
                raise NotCoveredError("a reduction of an already reduced value", [node.op])
            level[node_id] = "row"
            if node.op in ("argmax", "argmin") and node_id != analysis.output:
                raise NotCoveredError(f"{node.op} feeding further ops is not covered",
                                      [node.op])
            continue
        operand_levels = {level[r] for r in node.refs()}
        if "full" in operand_levels or "leaf" in operand_levels:
            level[node_id] = "full"
            if tuple(node.shape) != tuple(row_shape):
                raise NotCoveredError(
                    "an op whose output is not the reduced tensor's shape", [node.op])
            for ref in node.refs():
                if level[ref] == "row" and not _per_row_shape(nodes[ref].shape, row_shape, dims):
                    raise NotCoveredError(
                        "a reduced value (without keepdim) broadcast against the full tensor",
                        [nodes[ref].op])
        else:
            level[node_id] = "row"
    out_level = level[analysis.output]
    if out_level == "leaf":
        raise NotCoveredError("the output is an input", ["identity"])
    for node_id in ids:
        if level[node_id] == "leaf":
            _check_broadcast(nodes[node_id], row_shape)


def _per_row_shape(shape, row_shape, dims) -> bool:
    shape = (1,) * (len(row_shape) - len(shape)) + tuple(shape)
    if len(shape) != len(row_shape):
        return False
    return all((s == 1) if d in dims else (s == row_shape[d] or row_shape[d] == 1)
               for d, s in enumerate(shape))


def _check_broadcast(leaf: IRNode, shape) -> None:
    if len(leaf.shape) > len(shape) or torch.broadcast_shapes(leaf.shape, shape) != tuple(shape):
        raise NotCoveredError(f"an operand of shape {list(leaf.shape)} that does not broadcast "
                              f"to {list(shape)}", ["broadcast"])


def _check_matmul(analysis: Analysis) -> None:
    nodes = analysis.nodes
    mm = nodes[analysis.matmul]
    for operand in mm.refs():
        node = nodes[operand]
        if node.op == "transpose":
            node = nodes[node.refs()[0]]
        if node.op not in LEAVES:
            raise NotCoveredError("a matmul operand computed by other ops (a prologue) is not "
                                  "covered", [node.op])
    a_shape, b_shape = (_operand_shape(nodes, r) for r in mm.refs())
    if len(b_shape) == 2 and len(a_shape) >= 2:
        return
    if len(a_shape) == len(b_shape) == 3 and a_shape[0] == b_shape[0]:
        return
    raise NotCoveredError(f"matmul of shapes {list(a_shape)} @ {list(b_shape)}",
                          ["matmul (broadcast batch)"])


def _operand_shape(nodes, ref):
    return nodes[ref].shape


def op_summary(analysis: Analysis) -> str:
    ops = [n.op for n in analysis.topo() if n.op not in LEAVES]
    return " → ".join(ops)


__all__ = ["Analysis", "IRNode", "Const", "CoverageUnknown", "analysis_from_json",
           "analysis_to_json", "analyze", "classify", "op_summary", "trace_module"]
from search_engine.synthesis.offline import lowering  # noqa: E402,F401 (the tracer calls it)
