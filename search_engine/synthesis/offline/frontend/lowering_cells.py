"""Recurrent cells (`nn.RNNCell`, `nn.GRUCell`, `nn.LSTMCell`, one time step as in
KernelBench's level-3 RNN problems) lowered to GEMMs over each gate's rows of the weights
and their pointwise gate math, the way `lowering_index.multihead_attention` splits its
projection: the planner fuses the rest like any GEMM + epilogue.

Recurrent sequences (`nn.RNN`, `nn.GRU`, `nn.LSTM`, any layers, either direction) are not
unrolled: each layer and direction is the input's projection for every step at once (one
GEMM, `x @ W_ih.T + b_ih`) and a `recurrence` node, the sequential part, which one kernel
walks step by step (`writers/recurrence.py`). Its output holds each step's state
(time, batch, states, hidden): the hidden state, and an LSTM's cell state beside it; the
layer's output, the next layer's input and the final states are index ops over it."""

from __future__ import annotations

from search_engine.synthesis.offline.frontend.builder import _Uncovered
from search_engine.synthesis.offline.frontend.ir import Const
from search_engine.synthesis.offline.frontend.lowering_index import (
    linear,
    matmul,
    reshape,
    select,
)

RECURRENT_MODES = {"LSTM": "lstm", "GRU": "gru"}  # nn.RNN: "rnn_tanh" or "rnn_relu"

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


def recurrent_sequence(tr, fx_node, sub, x, path: str):
    """`sub` (nn.RNN, nn.GRU or nn.LSTM) over the sequence `x`, from the state the call
    passes (zeros when none): (output, h_n), or (output, (h_n, c_n)) for an LSTM."""
    kind = type(sub).__name__
    mode = RECURRENT_MODES.get(kind) or f"rnn_{sub.nonlinearity}"
    _check_sequence_module(sub, kind, tr.shape(x))
    shape = tr.shape(x)
    steps, batch = (shape[1], shape[0]) if sub.batch_first else shape[:2]
    h0, c0 = _initial_states(tr, fx_node, mode)
    directions = 2 if sub.bidirectional else 1
    # the first layer projects the input in its own order; later ones read time-major states
    layer_in, finals = x, ([], [])
    for layer in range(sub.num_layers):
        outputs = []
        for direction in range(directions):
            at = layer * directions + direction
            gates_in = _projected(tr, sub, path, layer_in, _suffix(layer, direction),
                                  sub.batch_first and layer == 0)
            states = _steps(tr, sub, path, mode, gates_in, _suffix(layer, direction),
                            _state_of(tr, h0, at), _state_of(tr, c0, at),
                            reverse=bool(direction))
            last = 0 if direction else steps - 1  # where a direction's final state is
            hidden = _state_part(tr, states, 0)
            outputs.append(hidden)
            finals[0].append(select(tr, hidden, 0, last))
            if mode == "lstm":
                finals[1].append(select(tr, _state_part(tr, states, 1), 0, last))
        layer_in = outputs[0] if directions == 1 else tr.add(
            "cat", outputs, (steps, batch, directions * sub.hidden_size), dim=2)
    output = layer_in
    if sub.batch_first:
        output = tr.add("permute", [output], _swapped(tr.shape(output)), perm=(1, 0, 2))
    h_n = _stacked(tr, finals[0])
    return (output, (h_n, _stacked(tr, finals[1]))) if mode == "lstm" else (output, h_n)


def _check_sequence_module(sub, kind: str, shape) -> None:
    if len(shape) != 3:
        raise _Uncovered(f"{kind} (unbatched input)")
    if getattr(sub, "proj_size", 0):
        raise _Uncovered(f"{kind} with proj_size")
    if sub.training and sub.dropout and sub.num_layers > 1:
        raise _Uncovered(f"{kind} with dropout while training")


def _swapped(shape) -> tuple[int, ...]:
    return (shape[1], shape[0]) + tuple(shape[2:])


def _initial_states(tr, fx_node, mode: str):
    """(h0, c0) as IR values of shape (layers * directions, batch, hidden), or None."""
    state = fx_node.args[1] if len(fx_node.args) > 1 else fx_node.kwargs.get("hx")
    if state is None:
        return None, None
    value = tuple(tr.value(s) for s in state) if isinstance(state, (tuple, list)) \
        else tr.value(state)
    if mode != "lstm":
        return value, None
    if not (isinstance(value, tuple) and len(value) == 2):
        raise _Uncovered("LSTM state that is not a (h0, c0) pair")
    return value


def _state_of(tr, state, at: int):
    """Layer-direction `at`'s initial state (batch, hidden): a zero constant without one."""
    if state is None:
        return Const(0.0)
    if not isinstance(state, int) or len(tr.shape(state)) != 3:
        raise _Uncovered("recurrent state (unbatched)")
    return select(tr, state, 0, at)


def _suffix(layer: int, direction: int) -> str:
    return f"_l{layer}" + ("_reverse" if direction else "")


def _param(tr, sub, path: str, name: str):
    tensor = getattr(sub, name, None)
    return None if tensor is None else tr.param(f"{path}.{name}", tensor)


def _projected(tr, sub, path: str, x, suffix: str, batch_major: bool):
    """The input's projection for every step, `x @ W_ih.T + b_ih`, time-major (steps, batch,
    gates * hidden): one 2-D GEMM over the input's rows in their own order (a batch-first
    input's projection is permuted after, where reading it costs nothing)."""
    lead, width = tr.shape(x)[:2], tr.shape(x)[2]
    rows = reshape(tr, x, (lead[0] * lead[1], width))
    gates = linear(tr, rows, _param(tr, sub, path, "weight_ih" + suffix),
                   _param(tr, sub, path, "bias_ih" + suffix))
    gates = reshape(tr, gates, lead + (tr.shape(gates)[1],))
    if not batch_major:
        return gates
    return tr.add("permute", [gates], _swapped(tr.shape(gates)), perm=(1, 0, 2))


def _steps(tr, sub, path: str, mode: str, gates_in, suffix: str, h0, c0, reverse: bool):
    """One layer in one direction's steps over its projected input: every step's states."""
    steps, batch, _ = tr.shape(gates_in)
    bias_hh = _param(tr, sub, path, "bias_hh" + suffix)
    return tr.add("recurrence", [gates_in, _param(tr, sub, path, "weight_hh" + suffix),
                                 Const(0.0) if bias_hh is None else bias_hh, h0, c0],
                  (steps, batch, 2 if mode == "lstm" else 1, sub.hidden_size),
                  mode=mode, reverse=reverse)


def _state_part(tr, states, part: int):
    """The hidden (0) or cell (1) state of every step: (time, batch, hidden). With one state
    (RNN, GRU) that is a reshape, which a returned output reads as a view (no copy kernel)."""
    steps, batch, n_states, hidden = tr.shape(states)
    if n_states == 1:
        return reshape(tr, states, (steps, batch, hidden))
    return select(tr, states, 2, part)


def _stacked(tr, finals: list):
    """The final states of every layer and direction: (layers * directions, batch, hidden)."""
    rows = [reshape(tr, f, (1,) + tr.shape(f)) for f in finals]
    if len(rows) == 1:
        return rows[0]
    shape = (len(rows),) + tr.shape(finals[0])
    return tr.add("cat", rows, shape, dim=0)
