"""Reading the arguments of a traced call for the lowering (`lowering.py` and its parts):
an argument by position or keyword, an int per spatial dim, a float from an IR constant."""

from __future__ import annotations

from search_engine.synthesis.offline.frontend.builder import _int
from search_engine.synthesis.offline.frontend.ir import Const


def int_tuple(value, rank: int) -> tuple[int, ...]:
    value = _int(value)
    if isinstance(value, (list, tuple)):
        out = tuple(int(_int(v)) for v in value)
        return out if len(out) == rank else out * rank if len(out) == 1 else out
    return (int(value),) * rank


def node_arg(fx_node, pos, name, default=None):
    if len(fx_node.args) > pos:
        return fx_node.args[pos]
    return fx_node.kwargs.get(name, default)


def const_float(value) -> float:
    return float(value.value if isinstance(value, Const) else value)
