"""In-place ops in a traced forward (``x.mul_(2)``, ``torch.relu_(x)``, ``x += y``,
``F.relu(x, inplace=True)``, ``nn.ReLU(inplace=True)``).

torch.fx records the call, but later code that names the mutated tensor still points at the
node before the mutation; the translator rebinds that node to the op's result, so every later
read sees the new value. That is sound only when no other view of the same storage is read
later (the view would see the mutation too) and the tensor is not a parameter or buffer (the
reference would change its own state on every call): those are refused.
"""

from __future__ import annotations

import contextlib
import inspect
import operator

import torch

from search_engine.synthesis.offline.frontend.builder import _Uncovered

# in-place operators (x += y) and the out-of-place op they compute
AUGMENTED = {"iadd": "add", "isub": "sub", "imul": "mul", "itruediv": "div", "ipow": "pow",
             "imod": "mod", "ifloordiv": "floordiv"}
# calls whose result shares the storage of their first argument
_VIEW_CALLS = {
    "view", "reshape", "flatten", "unflatten", "squeeze", "unsqueeze", "transpose", "permute",
    "t", "expand", "expand_as", "broadcast_to", "narrow", "select", "getitem", "contiguous",
    "detach", "view_as", "reshape_as", "swapaxes", "movedim", "chunk", "split", "unbind",
    "diagonal", "as_strided", "float", "to", "type_as", "dropout", "identity", "getattr",
}
_VIEW_MODULES = (torch.nn.Identity, torch.nn.Dropout, torch.nn.Flatten, torch.nn.Unflatten)


def out_of_place_name(fx_node, name: str) -> str:
    """The op an in-place call computes (``mul_`` → ``mul``, ``iadd`` → ``add``)."""
    if name in AUGMENTED:
        return AUGMENTED[name]
    if fx_node.op in ("call_method", "call_function") and name.endswith("_") \
            and not name.startswith("_"):
        return name[:-1]
    return name


def mutated_argument(gm, fx_node, name: str):
    """The fx node an in-place call writes to, or None when the call is out of place."""
    if not fx_node.args or not hasattr(fx_node.args[0], "op"):
        return None
    if fx_node.op == "call_module":
        return fx_node.args[0] if getattr(gm.get_submodule(fx_node.target), "inplace",
                                          False) else None
    if name in AUGMENTED or out_of_place_name(fx_node, name) != name:
        return fx_node.args[0]
    return fx_node.args[0] if _inplace_flag(fx_node) else None


def _inplace_flag(fx_node) -> bool:
    if "inplace" in fx_node.kwargs:
        return bool(fx_node.kwargs["inplace"])
    try:  # F.relu(x, True): the flag by position
        bound = inspect.signature(fx_node.target).bind(*fx_node.args, **fx_node.kwargs)
    except (TypeError, ValueError):
        return False
    return bool(bound.arguments.get("inplace", False))


def same_tensor(gm, target) -> list:
    """`target` and the nodes it was written in place from: one tensor, several fx nodes
    (``x += y`` returns x itself), all rebound together."""
    chain = [target]
    while chain[-1].op != "placeholder" and (
            written := mutated_argument(gm, chain[-1], _call_name(chain[-1]))) is not None:
        chain.append(written)
    return chain


def check_mutation(gm, fx_node, target) -> None:
    """Refuse an in-place write another view reads later, or one into the Model's state."""
    order = {n: i for i, n in enumerate(gm.graph.nodes)}
    base = target
    while _is_view(gm, base) and base.args and hasattr(base.args[0], "op"):
        base = base.args[0]
    aliases, stack = set(), [base]
    while stack:
        node = stack.pop()
        if node in aliases:
            continue
        aliases.add(node)
        stack.extend(u for u in node.users if _is_view(gm, u) and u.args and u.args[0] is node)
    if any(a.op == "get_attr" for a in aliases):
        raise _Uncovered("an in-place op on a parameter or buffer")
    for alias in aliases - set(same_tensor(gm, target)):  # views made after read the update
        if order[alias] < order[fx_node] and any(order[u] > order[fx_node] for u in alias.users):
            raise _Uncovered("an in-place op on a tensor that another view reads later")


def _is_view(gm, fx_node) -> bool:
    if fx_node.op == "call_module":
        return isinstance(gm.get_submodule(fx_node.target), _VIEW_MODULES)
    if fx_node.op not in ("call_method", "call_function"):
        return False
    name = _call_name(fx_node)
    return name in _VIEW_CALLS or mutated_argument(gm, fx_node, name) is not None


def _call_name(fx_node) -> str:
    target = fx_node.target
    return target if isinstance(target, str) else getattr(target, "__name__", "")



@contextlib.contextmanager
def augmented_operators_traced():
    """torch.fx traces ``x += y`` as ``x = x + y`` (its Proxy has no ``__iadd__``), which
    loses the update another name holding the same tensor sees (``z = x; x += y``). While
    tracing, the Proxy records the in-place operator itself, so the graph says what the
    reference does and the translator rebinds or refuses it as any in-place op."""
    import torch.fx

    added = []
    for name in AUGMENTED:
        dunder = f"__{name}__"
        if dunder not in vars(torch.fx.Proxy):
            setattr(torch.fx.Proxy, dunder, _recording(getattr(operator, name)))
            added.append(dunder)
    try:
        yield
    finally:
        for dunder in added:
            delattr(torch.fx.Proxy, dunder)


def _recording(op):
    def record(self, other):
        return self.tracer.create_proxy("call_function", op, (self, other), {})
    return record
