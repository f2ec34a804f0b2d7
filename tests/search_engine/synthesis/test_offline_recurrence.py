"""Recurrent sequences (nn.RNN, nn.GRU, nn.LSTM; KernelBench level 3's LSTM and GRU problems):
a layer and direction is the input's projection (a GEMM stage) and one `recurrence` kernel
that walks the steps. Each form below gets a default kernel that matches torch on the Triton
interpreter: layers, both directions, batch-first or time-major, with and without biases,
initial states given or zero, and the output, h_n or c_n returned; batch and hidden sizes
that are not powers of two and span several programs and chunks."""

from __future__ import annotations

import pytest
import torch

from search_engine.synthesis.base import NotCoveredError
from search_engine.synthesis.offline.plan.stages import plan

from .conftest import traced_analysis
from .test_offline_fuzz_forms import judge


def problem(module: str, forward: list[str], inputs: list[str], args: str = "x") -> str:
    body = "\n".join(f"        {line}" for line in forward)
    return f'''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = {module}

    def forward(self, {args}):
{body}


def get_inputs():
    return [{", ".join(inputs)}]


def get_init_inputs():
    return []
'''


FORMS = {
    # KernelBench's LSTMHn: batch first, states given, the final hidden states returned
    "lstm_hn_batch_first": problem(
        "nn.LSTM(6, 8, 2, batch_first=True)",
        ["_, state = self.rnn(x, (h0, c0))", "return state[0]"],
        ["torch.rand(3, 5, 6)", "torch.rand(2, 3, 8)", "torch.rand(2, 3, 8)"], "x, h0, c0"),
    # LSTMCn: the final cell states, three layers
    "lstm_cn_three_layers": problem(
        "nn.LSTM(4, 12, 3, batch_first=True)",
        ["_, (h_n, c_n) = self.rnn(x, (h0, c0))", "return c_n"],
        ["torch.rand(2, 4, 4)", "torch.rand(3, 2, 12)", "torch.rand(3, 2, 12)"], "x, h0, c0"),
    # LSTMBidirectional: both directions, the last step's output through a Linear
    "lstm_bidirectional_last_step": problem(
        "nn.LSTM(5, 8, 2, batch_first=True, bidirectional=True)",
        ["out, _ = self.rnn(x)", "return out[:, -1, :] * 2.0"],
        ["torch.randn(2, 6, 5)"]),
    # GRU time-major with h0 given, every step's output
    "gru_time_major_h0": problem(
        "nn.GRU(6, 10, 2)",
        ["output, h_n = self.rnn(x, h0)", "return output"],
        ["torch.rand(5, 3, 6)", "torch.rand(2, 3, 10)"], "x, h0"),
    # GRUBidirectionalHidden: h_n of both directions of two layers
    "gru_bidirectional_hidden": problem(
        "nn.GRU(4, 8, 2, bidirectional=True)",
        ["output, h_n = self.rnn(x, h0)", "return h_n"],
        ["torch.rand(4, 2, 4)", "torch.rand(4, 2, 8)"], "x, h0"),
    # nn.RNN with ReLU and no biases; 20 batch rows (two programs), 20 hidden units (two
    # chunks of units and of the reduction)
    "rnn_relu_no_bias_wide": problem(
        "nn.RNN(3, 20, 1, nonlinearity='relu', bias=False)",
        ["output, h_n = self.rnn(x)", "return output.sum(dim=0)"],
        ["torch.randn(4, 20, 3)"]),
    # nn.RNN tanh, batch first, the hidden state passed by keyword
    "rnn_tanh_hx_keyword": problem(
        "nn.RNN(5, 6, 2, batch_first=True)",
        ["output, h_n = self.rnn(x, hx=h)", "return h_n[-1] + output[:, 0, :]"],
        ["torch.randn(2, 3, 5)", "torch.randn(2, 2, 6)"], "x, h"),
}


@pytest.mark.parametrize("name", sorted(FORMS))
def test_recurrent_sequence_form_gets_a_correct_kernel(name, tmp_path):
    assert judge(FORMS[name], tmp_path) == "recurrence"


def test_a_layer_is_one_projection_and_one_recurrence_kernel_whatever_the_steps():
    """Not unrolled: the kernels do not grow with the sequence's length."""
    counts = []
    for steps in (3, 9):
        source = problem("nn.GRU(4, 8, 2)", ["output, h_n = self.rnn(x)", "return output"],
                         [f"torch.randn({steps}, 2, 4)"])
        an = traced_analysis(source)
        counts.append(sorted(an.nodes[s.anchor].op for s in plan(an)))
    assert counts[0] == counts[1]
    assert counts[0].count("recurrence") == 2 and counts[0].count("matmul") == 2


def test_a_recurrence_stores_its_states_unfused():
    """Its stored states are read back as the next step's: a pointwise op after it is not
    fused into its kernel (it would change what the next step reads)."""
    source = problem("nn.LSTM(4, 8, 1)", ["out, _ = self.rnn(x)", "return torch.relu(out)"],
                     ["torch.randn(3, 2, 4)"])
    an = traced_analysis(source)
    recurrences = [s for s in plan(an) if an.nodes[s.anchor].op == "recurrence"]
    assert recurrences and all(s.sink == s.anchor and not s.epilogue for s in recurrences)


def test_a_projected_lstm_is_refused_by_name():
    source = problem("nn.LSTM(4, 8, 1, proj_size=3)", ["out, _ = self.rnn(x)", "return out"],
                     ["torch.randn(3, 2, 4)"])
    with pytest.raises(NotCoveredError) as refused:
        traced_analysis(source)
    assert any("proj_size" in op for op in refused.value.ops)


def test_the_recurrence_graph_survives_the_sandboxs_json():
    """The probe answers with JSON: the recurrence's mode and direction are checked there."""
    from search_engine.synthesis.offline.frontend.json_io import (
        analysis_to_json,
        graph_from_json,
    )

    source = problem("nn.GRU(4, 8, 1, bidirectional=True)",
                     ["output, h_n = self.rnn(x)", "return output"], ["torch.randn(3, 2, 4)"])
    an = traced_analysis(source)
    again = graph_from_json(analysis_to_json(an))
    modes = sorted((n.attrs["mode"], n.attrs["reverse"]) for n in again.nodes.values()
                   if n.op == "recurrence")
    assert modes == [("gru", False), ("gru", True)]
    data = analysis_to_json(an)
    for node in data["nodes"]:
        if node["op"] == "recurrence":
            node["attrs"]["mode"] = "lstm; import os"
    with pytest.raises(Exception, match="mode"):
        graph_from_json(data)


def test_torch_and_the_kernel_agree_in_double_the_steps():
    """A longer sequence (24 steps) keeps matching: errors do not grow step by step."""
    torch.manual_seed(0)
    source = problem("nn.LSTM(3, 16, 1)", ["out, _ = self.rnn(x)", "return out"],
                     ["torch.randn(24, 2, 3)"])
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        assert judge(source, Path(tmp)) == "recurrence"


@pytest.mark.parametrize("module, x", [
    ("nn.LSTM(4, 6, 2, batch_first=True, bidirectional=True)", (3, 5, 4)),
    ("nn.LSTM(4, 6, 1, proj_size=2)", (5, 3, 4)),
    ("nn.GRU(4, 6, 3)", (5, 3, 4)),
    ("nn.RNN(4, 6, 2, bidirectional=True)", (5, 4)),  # unbatched
])
def test_shape_propagation_answers_the_shapes_the_module_returns(module, x):
    """Shape propagation does not run an RNN (torch would decompose every step on the meta
    device); what it answers instead has the module's own output shapes."""
    from torch import nn

    from search_engine.synthesis.offline.frontend.trace import _shapes_only

    sub = eval(module, {"nn": nn})
    inputs = torch.randn(*x)
    real = sub(inputs)
    shaped = _shapes_only(sub)(inputs)
    flat = lambda v: [t.shape for t in torch.utils._pytree.tree_leaves(v)]
    assert flat(shaped) == flat(real)


# -- the cooperative variant (RECURRENCE_COOP): a step's units spread over programs that
# wait for each other; GPU only, not a default until timed

COOP_FORM = problem("nn.LSTM(4, 12, 2, batch_first=True)", ["out, _ = self.rnn(x)",
                                                             "return out"],
                    ["torch.randn(3, 5, 4)"])


def _rendered(source: str, target: str, **overlay):
    from search_engine.synthesis.offline.synthesizer import checked_render, family_module

    an = traced_analysis(source)
    space = family_module(an)
    params = {**space.default_params(an, target, "strict"), **overlay}
    return an, space, params, checked_render(source, an, params)


def test_the_cooperative_recurrence_of_one_program_matches_torch(tmp_path):
    """Where one program holds every unit (12 units in a 16-wide block) its rendezvous waits
    for itself: the interpreter runs the variant's code through and it matches torch."""
    from .conftest import run_candidate

    _, _, _, candidate = _rendered(COOP_FORM, "interpreter", RECURRENCE_COOP=1)
    assert "sem='acquire'" in candidate and "kh_cnt" in candidate
    expected, got, launched = run_candidate(COOP_FORM, candidate, tmp_path)
    assert launched.count("kh_stage1_recurrence") == 1
    torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)


def test_the_cooperative_recurrence_on_a_gpu_spreads_units_and_passes_the_static_checks():
    from search_engine.evaluation.integrity.static_checks import run_static_checks

    source = problem("nn.GRU(8, 256, 1)", ["output, h_n = self.rnn(x)", "return output"],
                     ["torch.randn(6, 10, 8)"])
    *_, candidate = _rendered(source, "h200", RECURRENCE_COOP=1, BLOCK_N=32)
    # 10 rows: one block of batch rows; 256 units in blocks of 32: eight programs
    assert "kh_stage1_recurrence[(8,)]" in candidate
    assert "while (seen < 8) & (spins < SPIN_LIMIT)" in candidate
    refused = [f"{f.check}: {f.evidence}" for f in run_static_checks(candidate, torch.float32,
                                                                     "strict")
               if f.severity != "warning"]
    assert not refused, refused


def test_the_cooperative_recurrence_is_refused_where_it_cannot_run():
    from search_engine.hardware import TARGETS

    an, space, params, _ = _rendered(COOP_FORM, "h200", RECURRENCE_COOP=1)
    assert space.resource_problem(an, params, TARGETS["h200"]) == ""
    assert "GPU only" in space.resource_problem(an, params, TARGETS["interpreter"])
    wide = problem("nn.RNN(4, 2048, 1)", ["output, h_n = self.rnn(x)", "return output"],
                   ["torch.randn(3, 2, 4)"])
    an = traced_analysis(wide)
    narrow = {**space.default_params(an, "h200", "strict"), "RECURRENCE_COOP": 1,
              "BLOCK_N": 16}
    assert "on the chip at once" in space.resource_problem(an, narrow, TARGETS["h200"])


def test_a_latency_bound_recurrence_moves_to_the_cooperative_variant_first():
    import random

    an, space, params, _ = _rendered(COOP_FORM, "h200")
    moves = space.ordered_moves(an, "latency", "strict", random.Random(0), params)
    assert moves[0] == "recurrence_coop"
    assert "recurrence_coop" in space.ordered_moves(an, "memory", "strict", random.Random(0))
    moved = space.apply_move(an, params, "recurrence_coop")
    assert moved["RECURRENCE_COOP"] == 1 and space.apply_move(an, moved,
                                                               "recurrence_coop") is None
    pool = traced_analysis(problem("nn.MaxPool1d(2)", ["return self.rnn(x)"],
                                   ["torch.randn(2, 3, 8)"]))
    assert "recurrence_coop" not in space.ordered_moves(pool, "latency", "strict",
                                                        random.Random(0))


@pytest.mark.parametrize("shape, mode, blocks", [
    ((512, 10, 2, 256), "lstm", (64, 64, 32)),  # KernelBench's LSTM at the GPU defaults
    ((64, 256, 2, 256), "lstm", (128, 128, 64)),  # the space's largest tiles, a wide batch
    ((512, 3, 1, 128), "gru", (64, 64, 32)),
    ((5, 2, 1, 8), "rnn_tanh", (128, 128, 64)),
])
def test_a_steps_tiles_fit_the_live_value_budget_and_tl_dot(shape, mode, blocks):
    from search_engine.synthesis.offline.frontend.ir import IRNode
    from search_engine.synthesis.offline.writers.recurrence import (
        DOT_MIN, GATES, LIVE_VALUES, tiles,
    )

    node = IRNode(0, "recurrence", [], {"mode": mode}, shape)
    rows, units, depth = tiles(node, dict(zip(("BLOCK_M", "BLOCK_N", "BLOCK_K"), blocks)))
    assert min(rows, units, depth) >= DOT_MIN
    assert GATES[mode] * (rows + depth) * units <= LIVE_VALUES
    assert rows <= max(DOT_MIN, blocks[0]) and units <= max(DOT_MIN, blocks[1])
