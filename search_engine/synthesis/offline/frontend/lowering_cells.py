"""Recurrent cells (`nn.RNNCell`, `nn.GRUCell`, `nn.LSTMCell`, one time step as in
KernelBench's level-3 RNN problems) lowered to GEMMs over each gate's rows of the weights
and their pointwise gate math, the way `lowering_index.multihead_attention` splits its
projection: the planner fuses the rest like any GEMM + epilogue."""

from __future__ import annotations

from search_engine.synthesis.offline.frontend.builder import _Uncovered
from search_engine.synthesis.offline.frontend.ir import Const
from search_engine.synthesis.offline.frontend.lowering_index import matmul

def recurrent_cell(tr, fx_node, sub, x, path: str):
    """One step of `sub` on input `x` and the state the call passes (zeros when none):
    the new hidden state, or (h, c) for an LSTM cell."""
    kind = type(sub).__name__
    if len(tr.shape(x)) != 2:
        raise _Uncovered(f"{kind} (unbatched input)")
    state = fx_node.args[1] if len(fx_node.args) > 1 else fx_node.kwargs.get("hx")
    if kind == "LSTMCell":
        h, c = (None, None) if state is None else (tr.value(state[0]), tr.value(state[1]))
    else:
        h, c = (None if state is None else tr.value(state)), None
    gates = _Gates(tr, sub, path, x, h)
    if kind == "RNNCell":
        pre = tr.binary("add", gates.of_input(0), gates.of_hidden(0), gates.shape)
        return tr.unary("relu" if sub.nonlinearity == "relu" else "tanh", pre)
    if kind == "GRUCell":
        add = lambda a, b: tr.binary("add", a, b, gates.shape)  # noqa: E731
        reset = tr.unary("sigmoid", add(gates.of_input(0), gates.of_hidden(0)))
        update = tr.unary("sigmoid", add(gates.of_input(1), gates.of_hidden(1)))
        new = tr.unary("tanh", add(gates.of_input(2),
                                   tr.binary("mul", reset, gates.of_hidden(2), gates.shape)))
        if h is None:  # h' = (1 - z) * n + z * 0
            return tr.binary("mul", tr.binary("sub", Const(1.0), update, gates.shape), new,
                             gates.shape)
        return tr.binary("add", new, tr.binary("mul", update, tr.binary(
            "sub", h, new, gates.shape), gates.shape), gates.shape)  # n + z * (h - n)
    pre = [tr.binary("add", gates.of_input(i), gates.of_hidden(i), gates.shape)
           for i in range(4)]
    in_gate, forget, out_gate = (tr.unary("sigmoid", pre[i]) for i in (0, 1, 3))
    cell_in = tr.binary("mul", in_gate, tr.unary("tanh", pre[2]), gates.shape)
    cell = cell_in if c is None else tr.binary(
        "add", tr.binary("mul", forget, c, gates.shape), cell_in, gates.shape)
    return (tr.binary("mul", out_gate, tr.unary("tanh", cell), gates.shape), cell)


class _Gates:
    """Each gate's share of the input and hidden projections (weight rows `part * H`)."""

    def __init__(self, tr, sub, path: str, x, h):
        self.tr, self.sub, self.path, self.x, self.h = tr, sub, path, x, h
        self.hidden = sub.hidden_size
        self.shape = (tr.shape(x)[0], self.hidden)

    def of_input(self, part: int):
        return self._project(self.x, "ih", part)

    def of_hidden(self, part: int):
        if self.h is None:  # a zero state: only the bias is left
            bias = self._rows("bias_hh", part)
            return Const(0.0) if bias is None else bias
        return self._project(self.h, "hh", part)

    def _project(self, value, which: str, part: int):
        tr = self.tr
        rows = self._rows(f"weight_{which}", part)
        y = matmul(tr, value, tr.add("transpose", [rows], tuple(reversed(tr.shape(rows)))))
        bias = self._rows(f"bias_{which}", part)
        return y if bias is None else tr.binary("add", y, bias, tr.shape(y))

    def _rows(self, name: str, part: int):
        tensor = getattr(self.sub, name, None)
        if tensor is None:
            return None
        whole = self.tr.param(f"{self.path}.{name}", tensor)
        shape = (self.hidden,) + tuple(tensor.shape[1:])
        return self.tr.add("slice", [whole], shape, dim=0, start=part * self.hidden, step=1)
