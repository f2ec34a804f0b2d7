"""Recurrent sequences: one layer of an nn.RNN, nn.GRU or nn.LSTM in one direction (a stage of
the staged family, see staged.py; the frontend's `lowering_cells.recurrent_sequence`).

The input's projection for every step (``x @ W_ih.T + b_ih``) is the GEMM stage before this
one; what is left is sequential: step t needs the hidden state of step t-1. One kernel walks
all the steps (one launch a layer, not one a step): a program owns a block of batch rows and
every hidden unit, and at each step computes ``h_{t-1} @ W_hh.T`` chunk by chunk with tl.dot
(the gates of a chunk of units side by side, so the state update stays in registers), adds
the projected input and ``b_hh``, applies the gate math and stores the step's states. The
states are stored into the stage's output (time, batch, states, hidden), which is also where
the next step reads the previous state back (a CTA barrier makes every thread's stores of a
step visible before the next step's loads). Batch rows are independent, so programs never
wait on each other: the kernel runs the same on the GPU and on the Triton interpreter.

With `RECURRENCE_COOP` (GPU only, the `recurrence_coop` move; not a default until timed) a
step's units are spread over programs, one block of units each, which read only their rows of
`W_hh`: after a step's stores each program counts itself in on its batch block's counter
for the step and waits until every block of units has, so the next step reads the whole
state. One program reads all of `W_hh` at every step otherwise (1 MB for KernelBench's
256-unit LSTM), which bounds a step by one SM's bandwidth to L2.
"""

from __future__ import annotations

from search_engine.synthesis.base import NotCoveredError
from search_engine.synthesis.offline.writers.codegen import tanh_code
from search_engine.synthesis.offline.writers.staged_context import (
    dot_precision,
    kernel_source,
    launch,
    p2,
)
from search_engine.synthesis.offline.writers.staged_expr import Expr

GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}
DOT_MIN = 16  # tl.dot's smallest tile side
# fp32 values a program keeps live per chunk (gate accumulators and weight tiles): 64 a thread
# at 4 warps
LIVE_VALUES = 8192
# The cooperative variant (`RECURRENCE_COOP`, GPU only): each program owns a block of units,
# and a step's programs wait for each other, so all must be on the chip at once: at most
# this many (fewer than any Hopper or Ampere GPU's SMs), each step's wait bounded by
# SPIN_LIMIT polls.
COOP_MAX_PROGRAMS = 64
SPIN_LIMIT = 1 << 20


def tiles(node, params) -> tuple[int, int, int]:
    """(batch rows, hidden units, reduction depth) of a program's tiles at each step."""
    _, batch, _, hidden = node.shape
    gates = GATES[node.attrs["mode"]]
    rows = max(DOT_MIN, min(params["BLOCK_M"], p2(batch)))
    units = max(DOT_MIN, min(params["BLOCK_N"], p2(hidden)))
    depth = max(DOT_MIN, min(params["BLOCK_K"], p2(hidden)))
    sizes = [rows, units, depth]
    while gates * (sizes[0] + sizes[2]) * sizes[1] > LIVE_VALUES and max(sizes) > DOT_MIN:
        widest = sizes.index(max(sizes))  # the units first on a tie: they size both terms
        widest = 1 if sizes[1] == sizes[widest] else widest
        sizes[widest] //= 2
    return tuple(sizes)


def coop_refusal(node, params) -> str:
    """Why the cooperative variant cannot run this recurrence, or ''."""
    rows, units, _ = tiles(node, params)
    _, batch, _, hidden = node.shape
    programs = -(-batch // rows) * -(-hidden // units)
    if programs > COOP_MAX_PROGRAMS:
        return (f"the cooperative recurrence's {programs} programs may not all be on the "
                f"chip at once (at most {COOP_MAX_PROGRAMS}): larger tiles")
    return ""


def write(ctx, stage, name):
    node = ctx.nodes[stage.anchor]
    steps, batch, _, hidden = node.shape
    rows, units, depth = tiles(node, ctx.params)
    coop = bool(ctx.params.get("RECURRENCE_COOP"))
    refusal = coop_refusal(node, ctx.params) if coop else ""
    if refusal:
        raise NotCoveredError(refusal, ["recurrence (coop grid)"])
    at = _Layout(ctx, stage, node)
    unit_blocks = -(-hidden // units)
    body = ["pid = tl.program_id(0)",
            f"b_block = pid // {unit_blocks}" if coop else "b_block = pid",
            "bb = b_block * BLOCK_B + tl.arange(0, BLOCK_B).to(tl.int64)",
            f"b_in = bb < {batch}",
            "jr = tl.arange(0, BLOCK_J).to(tl.int64)",
            "kr = tl.arange(0, BLOCK_K).to(tl.int64)",
            f"for s in range(0, {steps}):",
            "    sv = bb * 0 + s",
            f"    tt = {steps - 1} - sv" if at.reverse else "    tt = sv",
            # the previous step's time, and whether this is the first step (no previous one)
            "    tp = tt + 1" if at.reverse else "    tp = tt - 1",
            "    first = sv == 0",
            "    later = sv > 0"]
    chunk = _chunk(at)
    if coop:  # this program's block of units only; then the step's rendezvous
        body.append(f"    j0 = (pid % {unit_blocks}) * BLOCK_J")
        body += ["    " + line for line in chunk]
        body += ["    " + line for line in _rendezvous(steps, unit_blocks)]
    else:
        body.append(f"    for j0 in range(0, {hidden}, BLOCK_J):")
        body += ["        " + line for line in chunk]
        # every thread's stores of this step, seen by every thread at the next one
        body.append("    tl.debug_barrier()")
    blocks = -(-batch // rows) * (unit_blocks if coop else 1)
    consts = {"BLOCK_B": rows, "BLOCK_J": units, "BLOCK_K": depth}
    lines = []
    if coop:
        counters = f"kh_cnt{stage.anchor}"
        lines.append(f"{counters} = torch.zeros(({-(-batch // rows)}, {steps}), "
                     f"device={ctx.device()}, dtype=torch.int32)")
        ctx.kernel_params.append("cnt_ptr")
        ctx.call_args.append(counters)
        consts["SPIN_LIMIT"] = SPIN_LIMIT
    source = kernel_source(name, ctx, list(consts), body)
    return source, lines + [launch(name, ctx, f"({blocks},)", consts,
                                   ctx.params["num_warps"])]


def _rendezvous(steps, unit_blocks: int) -> list[str]:
    """The cooperative variant's end of a step: every thread's stores done, the program
    counted in on its batch block's counter for the step (release), then a poll until every
    block of units has (acquire), so the next step reads the whole state. A wait that never
    ends (programs not co-resident after all) gives up after SPIN_LIMIT polls: a wrong
    result the evaluator reports, not a hung GPU."""
    counter = f"cnt_ptr + b_block * {steps} + s"
    return ["tl.debug_barrier()",
            f"tl.atomic_add({counter}, 1, sem='release')",
            f"seen = tl.atomic_add({counter}, 0, sem='acquire')", "spins = 0",
            f"while (seen < {unit_blocks}) & (spins < SPIN_LIMIT):",
            f"    seen = tl.atomic_add({counter}, 0, sem='acquire')",
            "    spins += 1",
            "tl.debug_barrier()"]


class _Layout:
    """What a step's code needs: the stage's operands, mode, sizes and its output's strides."""

    def __init__(self, ctx, stage, node):
        self.ctx = ctx
        self.gates_in, self.weight, self.bias, self.h0, self.c0 = node.operands
        _, batch, n_states, self.hidden = node.shape
        self.mode, self.reverse = node.attrs["mode"], bool(node.attrs.get("reverse"))
        self.out = ctx.pointer(stage.sink)
        self.strides = (batch * n_states * self.hidden, n_states * self.hidden, self.hidden)
        self.precision = dot_precision(ctx.params)

    def offset(self, time: str, col: str, part: int) -> str:
        """The output's offset of (time, bb, part, col) over a [BLOCK_B, BLOCK] tile."""
        step, row, state = self.strides
        return (f"{time}[:, None] * {step} + bb[:, None] * {row} + {part * state} + "
                f"{col}[None, :]")

    def previous(self, body: list[str], col: str, part: int, mask: str) -> str:
        """The previous step's state `part` at columns `col`, read back from the output
        (nothing is read at the first step: its mask is off there)."""
        body.append(f"prev{part}_{col} = tl.load({self.out} + {self.offset('tp', col, part)}, "
                    f"mask={mask} & later[:, None], other=0.0)")
        return f"prev{part}_{col}"


def _chunk(at: _Layout) -> list[str]:
    """One step's work on a chunk of units (`j0`): the hidden projection, the gate math and
    the stores of the new states."""
    hidden, gates = at.hidden, GATES[at.mode]
    expr = Expr(at.ctx, [])
    chunk = ["jj = j0 + jr", f"j_in = jj < {hidden}", "m2 = b_in[:, None] & j_in[None, :]"]
    chunk += [f"acc{g} = tl.zeros([BLOCK_B, BLOCK_J], tl.float32)" for g in range(gates)]
    inner = ["kk = k0 + kr", f"k_in = kk < {hidden}", "hm = b_in[:, None] & k_in[None, :]"]
    expr.body = inner
    previous = at.previous(inner, "kk", 0, "hm")
    initial = expr.value(at.h0, ("bb[:, None]", "kk[None, :]"), "hm & first[:, None]")
    inner.append(f"hk = tl.where(first[:, None], {initial}, {previous})")
    for g in range(gates):
        w = expr.value(at.weight, (f"({g * hidden} + jj)[None, :]", "kk[:, None]"),
                       "k_in[:, None] & j_in[None, :]")
        inner.append(f"acc{g} += tl.dot(hk, {w}, input_precision=\"{at.precision}\")")
    chunk.append(f"for k0 in range(0, {hidden}, BLOCK_K):")
    chunk += ["    " + line for line in inner]
    expr.cache, expr.body = {}, chunk  # values of the k loop's scope are not reused after it
    index = ("tt[:, None]", "bb[:, None]")
    for g in range(gates):
        projected = expr.value(at.gates_in, index + (f"({g * hidden} + jj)[None, :]",), "m2")
        b = expr.value(at.bias, (f"({g * hidden} + jj)[None, :]",), "j_in[None, :]")
        chunk += [f"x{g} = {projected}", f"r{g} = acc{g} + {b}"]
    for part, value in enumerate(_update(chunk, expr, at)):
        chunk.append(f"tl.store({at.out} + {at.offset('tt', 'jj', part)}, {value}, mask=m2)")
    return chunk


def _update(body: list[str], expr: Expr, at: _Layout) -> list[str]:
    """The gate math over the chunk's pre-activations (x<g>: projected input, r<g>: the
    hidden projection with b_hh): the new states' values."""
    if at.mode in ("rnn_tanh", "rnn_relu"):
        act = tanh_code("x0 + r0") if at.mode == "rnn_tanh" else "tl.maximum(x0 + r0, 0.0)"
        body.append(f"h_new = {act}")
        return ["h_new"]

    def state(part: int) -> str:
        prev = at.previous(body, "jj", part, "m2")
        first = expr.value((at.h0, at.c0)[part], ("bb[:, None]", "jj[None, :]"),
                           "m2 & first[:, None]")
        body.append(f"s{part} = tl.where(first[:, None], {first}, {prev})")
        return f"s{part}"

    if at.mode == "gru":  # torch's order: reset, update, new
        h_prev = state(0)
        body += ["reset = tl.sigmoid(x0 + r0)", "update = tl.sigmoid(x1 + r1)",
                 f"cand = {tanh_code('x2 + reset * r2')}",
                 f"h_new = cand + update * ({h_prev} - cand)"]
        return ["h_new"]
    c_prev = state(1)  # torch's order: input, forget, cell, output
    body += ["c_new = tl.sigmoid(x1 + r1) * " + c_prev
             + f" + tl.sigmoid(x0 + r0) * {tanh_code('x2 + r2')}",
             f"h_new = tl.sigmoid(x3 + r3) * {tanh_code('c_new')}"]
    return ["h_new", "c_new"]
