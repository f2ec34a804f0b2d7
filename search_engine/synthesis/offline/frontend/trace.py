"""Trace a loaded problem module into its op graph: build `Model` and `get_inputs()` on the
meta device, trace the model with torch.fx, propagate shapes with `ShapeProp` and translate
the graph (`translator.py`).

This RUNS the problem's code: only the sandboxed probe (`search_engine.problem_probe`) calls
`trace_module`.
"""

from __future__ import annotations

import contextlib

import torch

from search_engine.synthesis.base import NotCoveredError
from search_engine.synthesis.offline.frontend.inplace import augmented_operators_traced
from search_engine.synthesis.offline.frontend.ir import Analysis
from search_engine.synthesis.offline.frontend.translator import _Translator


def trace_module(module, batch: int | None = None) -> Analysis:
    """Trace a loaded problem module. This RUNS the problem's code: only the sandboxed probe
    (`search_engine.problem_probe`) calls it.

    The model and its inputs are built on the meta device (shapes and dtypes, no storage), so
    an official-size problem costs no memory; `materialized_bytes` on the result says how much
    real tensor data the analysis held (0 unless the problem forced real tensors). With
    `batch`, the problem is traced at that batch size instead of its own."""
    import torch.fx
    from torch.fx.passes.shape_prop import ShapeProp

    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, name):
            raise NotCoveredError(f"the problem does not define {name}")
    torch.manual_seed(0)
    model, inputs = _build_on_meta(module, batch)
    state = _tensor_attributes(model)
    try:
        with augmented_operators_traced():
            graph_module = _symbolic_trace(model)
    except Exception as exc:  # data-dependent control flow and the like
        try:
            graph_module = _restored(model, state, _sized_trace(model, inputs))
        except NotCoveredError:
            raise
        except Exception:
            raise NotCoveredError(f"torch.fx could not trace the reference Model: {exc}") \
                from exc
    else:
        graph_module = _restored(model, state, graph_module)
    try:
        with torch.no_grad(), _recurrences_shaped(graph_module):
            ShapeProp(graph_module).propagate(*inputs)
    except Exception as exc:
        raise NotCoveredError(f"the reference Model did not run on get_inputs(): "
                              f"{type(exc).__name__}: {exc}") from exc
    analysis = _Translator(graph_module, len(inputs), inputs).run()
    analysis.materialized_bytes = _real_bytes(model, inputs)
    return analysis


@contextlib.contextmanager
def _recurrences_shaped(graph_module):
    """RNN modules answer shape propagation with empty outputs of their shapes: run on the
    meta device, torch decomposes every step of every layer (70 s for a 6-layer GRU over
    512 steps); the translator lowers them from their parameters anyway."""
    shaped = [sub for sub in graph_module.modules() if isinstance(sub, torch.nn.RNNBase)]
    try:
        for sub in shaped:
            sub.forward = _shapes_only(sub)
        yield
    finally:
        for sub in shaped:
            vars(sub).pop("forward", None)


def _shapes_only(sub):
    def forward(x, hx=None):
        directions = 2 if sub.bidirectional else 1
        width = sub.proj_size or sub.hidden_size
        if x.dim() == 3:
            steps, batch = x.shape[:2][::-1] if sub.batch_first else x.shape[:2]
            output = (batch, steps) if sub.batch_first else (steps, batch)
            state = (sub.num_layers * directions, batch)
        else:
            output, state = (x.shape[0],), (sub.num_layers * directions,)
        h_n = x.new_empty(state + (width,))
        output = x.new_empty(output + (directions * width,))
        if isinstance(sub, torch.nn.LSTM):
            return output, (h_n, x.new_empty(state + (sub.hidden_size,)))
        return output, h_n
    return forward


def _symbolic_trace(model):
    """torch.fx's trace of `model`. A submodule named by a Python keyword (a ModuleDict's
    'lambda' or 'in') makes torch.fx write `self.blocks.lambda` into the Python it generates,
    which does not compile; the graph itself is right, and the analysis only walks and
    interprets it, so such a graph is kept without its generated forward."""
    import torch.fx

    try:
        return torch.fx.symbolic_trace(model)
    except SyntaxError:
        tracer = torch.fx.Tracer()
        graph = tracer.trace(model)
        return _graph_only_module()(tracer.root, graph, type(model).__name__)


def _graph_only_module():
    import torch.fx

    class GraphOnlyModule(torch.fx.GraphModule):
        """A GraphModule whose generated forward may not compile (never called here)."""

        def recompile(self):
            try:
                return super().recompile()
            except SyntaxError:
                return None

    return GraphOnlyModule


_RECORDED_FACTORIES = ("ones", "zeros", "full", "arange")


def _sized_trace(model, inputs):
    """A trace whose tensors know their (meta) sizes, for a forward that computes with them
    (``T = x.size(1)``, ``self.mask[:, :, :T, :T]``, ``B, T, C = x.shape``); buffers are
    graph leaves, so a mask sliced from one stays an op on a stored tensor."""
    import inspect

    import torch.fx
    from torch.fx.experimental.meta_tracer import MetaProxy, MetaTracer

    class SizedProxy(MetaProxy):
        def size(self, dim=None):  # MetaProxy.size(0) gives the whole shape
            meta = getattr(self, "_tensor_meta", None)
            if meta is None:
                return super().size(dim)
            return meta.size() if dim is None else meta.size(dim)

    class SizedTracer(MetaTracer):
        proxy_buffer_attributes = True
        _TORCH_METHODS_TO_PATCH = []  # the factories are recorded below instead

        computing_meta = False

        def proxy(self, node):
            return SizedProxy(node, self)

        def create_proxy(self, *args, **kwargs):
            # meta kernels call factories themselves (triu's makes aranges): not recorded
            outer, self.computing_meta = self.computing_meta, True
            try:
                return super().create_proxy(*args, **kwargs)
            finally:
                self.computing_meta = outer

        def trace(self, root, meta_args, concrete_args=None):
            # a factory call with plain sizes (``torch.ones(T, T)``, T from a size) is a
            # graph node, not a constant computed during the trace
            originals = {name: getattr(torch, name) for name in _RECORDED_FACTORIES}

            def recorder(factory):
                def record(*args, **kwargs):
                    if self.computing_meta:
                        return factory(*args, **kwargs)
                    return self.create_proxy("call_function", factory, args,
                                             {**kwargs, "device": "meta"})
                return record
            try:
                for name, factory in originals.items():
                    setattr(torch, name, recorder(factory))
                return super().trace(root, meta_args, concrete_args)
            finally:
                for name, factory in originals.items():
                    setattr(torch, name, factory)

    names = list(inspect.signature(model.forward).parameters)
    meta_args = {n: x for n, x in zip(names, inputs) if isinstance(x, torch.Tensor)}
    tracer = SizedTracer()
    graph = tracer.trace(model, meta_args)
    return torch.fx.GraphModule(tracer.root, graph, type(model).__name__)


def _build_on_meta(module, batch: int | None = None):
    """The Model and get_inputs() with every factory call on the meta device; `.cuda()` and
    `.to(device)` keep meta tensors on meta (the analysis needs shapes, never values).
    With `batch`, the inputs are those of another batch size (`batch_shapes`)."""
    with on_meta():
        model = module.Model(*module.get_init_inputs())
    inputs = inputs_on_meta(module)
    with on_meta():
        if batch is not None:
            from search_engine.batch_shapes import inputs_at_batch

            inputs, _ = inputs_at_batch(module, inputs, batch,
                                        draw=lambda: list(module.get_inputs()))
    if isinstance(model, torch.nn.Module):
        model.eval()  # as the evaluator runs the reference
    return model, inputs


def inputs_on_meta(module) -> list:
    """get_inputs() built on the meta device; where that cannot be (a size or a value read
    off a tensor's data), built for real and only their shapes and dtypes kept."""
    try:
        with on_meta():
            return list(module.get_inputs())
    except Exception:  # noqa: BLE001 - data-dependent inputs: the real build decides
        real = list(module.get_inputs())
    return [x.to("meta") if isinstance(x, torch.Tensor) else x for x in real]


@contextlib.contextmanager
def on_meta():
    """Every factory call on the meta device, `.cuda()`/`.to(device)`/`.cpu()` of a meta
    tensor a no-op, and torch.distributions' argument checks off: they read values
    (`bool(tensor)`), which meta tensors have none of, while sampling needs only shapes
    (KernelBench draws its losses' inputs from `Pareto(...)`)."""
    from torch.distributions import Distribution

    originals = {name: getattr(torch.Tensor, name) for name in ("cuda", "to", "cpu")}
    checked = Distribution._validate_args

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
        Distribution.set_default_validate_args(False)
        with torch.device("meta"):
            yield
    finally:
        for name, fn in originals.items():
            setattr(torch.Tensor, name, fn)
        Distribution.set_default_validate_args(checked)


_MOVES = ("to", "cuda", "cpu", "contiguous", "detach", "float")


def _tensor_attributes(model) -> dict:
    """Plain tensor attributes (not parameters or buffers) of every submodule, by path:
    KernelBench's RNNs keep their state there (``self.hidden = torch.randn(...)``)."""
    if not isinstance(model, torch.nn.Module):
        return {}
    return {(prefix, name): value for prefix, sub in model.named_modules()
            for name, value in vars(sub).items() if isinstance(value, torch.Tensor)}


def _restored(model, state: dict, graph_module):
    """The traced graph with the tensors a forward reassigned during tracing put back. A
    forward that only moves its tensor (``self.hidden = self.hidden.to(x.device)``) reads
    the stored one; one that stores a computed value keeps state between calls, which a
    kernel cannot reproduce from the inputs alone: refused, by name."""
    import torch.fx

    for (prefix, name), tensor in state.items():
        owner = model.get_submodule(prefix)
        now = vars(owner).get(name)
        if not isinstance(now, torch.fx.Proxy):
            continue
        node = now.node
        moved = node.op == "call_method" and node.target in _MOVES and node.args and \
            getattr(node.args[0], "op", "") == "get_attr"
        path = f"{prefix}.{name}" if prefix else name
        if not moved:
            raise NotCoveredError("the forward stores a computed tensor in the model "
                                  f"(self.{path}): state kept between calls",
                                  [f"state self.{path}"])
        setattr(owner, name, tensor)
        try:  # the graph module copied the attribute while it was the Proxy
            held = graph_module.get_submodule(prefix)
        except AttributeError:
            continue
        if isinstance(vars(held).get(name), torch.fx.Proxy):
            setattr(held, name, tensor)
    return graph_module


def _real_bytes(model, inputs) -> int:
    tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
    if isinstance(model, torch.nn.Module):
        tensors += list(model.parameters()) + list(model.buffers())
    return int(sum(t.numel() * t.element_size() for t in tensors if not t.is_meta))
