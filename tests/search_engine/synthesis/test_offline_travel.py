"""Kernels that travel: a generated module runs at batch sizes other than the problem's own
(its sizes read from the call's inputs), in every family whose sizes follow the batch; a
module whose kernels are tied to the traced shape says so plainly instead of answering."""

from __future__ import annotations

import pytest
import torch

from search_engine.synthesis.offline.synthesizer import (
    OfflineSynthesizer, family_module, traveling_render,
)
from search_engine.synthesis.offline.writers import travel

from .conftest import load_candidate, load_problem, traveling_analysis
from .test_offline_staged import problem as staged_problem
from .test_offline_templates import problem

CASES = {
    "elementwise_broadcast": problem("torch.clamp(F.gelu(x * 0.5 + self.b) + y, -3.0, 3.0)",
                                     "torch.randn(4, 24), torch.randn(4, 24)",
                                     "self.b = nn.Parameter(torch.randn(24))", "x, y"),
    "rows_softmax": problem("torch.softmax(x, dim=-1)", "torch.randn(4, 37)"),
    "rows_layernorm": problem("F.layer_norm(x, x.shape[1:])", "torch.randn(4, 6, 10)"),
    "rows_strided": problem("torch.sum(x, dim=1, keepdim=True)", "torch.randn(4, 20, 3)"),
    "matmul_linear_relu": problem("torch.relu(self.fc(x))", "torch.randn(6, 16)",
                                  "self.fc = nn.Linear(16, 12)"),
    "bmm": problem("torch.bmm(x, w) * 2.0", "torch.randn(3, 8, 16), torch.randn(3, 16, 8)",
                   args="x, w"),
    "conv2d_epilogue": staged_problem("self.conv = nn.Conv2d(3, 4, 3, padding=1)",
                                      "torch.relu(self.conv(x))", "torch.randn(2, 3, 6, 6)"),
    "maxpool2d": staged_problem("self.p = nn.MaxPool2d(2)", "self.p(x)",
                                "torch.randn(6, 3, 8, 8)"),
    "conv2d_pooled": staged_problem("self.conv = nn.Conv2d(3, 4, 3)",
                                    "F.max_pool2d(torch.relu(self.conv(x)), 2)",
                                    "torch.randn(3, 3, 9, 10)"),
    "cumsum": staged_problem("", "torch.cumsum(x, dim=1)", "torch.randn(4, 30)"),
    "argmax_flat": staged_problem("", "torch.argmax(x)", "torch.rand(5, 7)"),
    "attention": staged_problem("", "F.scaled_dot_product_attention(q, k, v)",
                                "torch.randn(2, 9, 8), torch.randn(2, 9, 8), "
                                "torch.randn(2, 9, 8)", "q, k, v"),
    "staged_gemm_groupnorm": staged_problem(
        "self.fc = nn.Linear(12, 8)\nself.gn = nn.GroupNorm(2, 8)",
        "torch.relu(self.gn(self.fc(x)))", "torch.randn(32, 12)"),
}


def candidate_for(source: str) -> str:
    an = traveling_analysis(source)
    params = family_module(an).default_params(an, "interpreter", "strict")
    return traveling_render(source, an, params)


def at_batch(inputs: list, batch: int) -> list:
    """The inputs with every batch tensor redrawn at `batch` rows."""
    lead = inputs[0].shape[0]
    return [torch.randn(batch, *x.shape[1:]) if isinstance(x, torch.Tensor) and x.dim()
            and x.shape[0] == lead else x for x in inputs]


@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_kernels_run_at_other_batch_sizes(name, tmp_path, run):
    source = CASES[name]
    candidate = candidate_for(source)
    assert travel.takes_any_batch(candidate), candidate[-1500:]
    module, problem_module = load_candidate(candidate, tmp_path), load_problem(source)
    torch.manual_seed(0)
    reference = problem_module.Model(*problem_module.get_init_inputs()).eval()
    model = module.ModelNew(*problem_module.get_init_inputs()).eval()
    model.load_state_dict(reference.state_dict())
    torch.manual_seed(1)
    official = problem_module.get_inputs()
    for batch in (official[0].shape[0], 1, official[0].shape[0] * 2 + 1):
        inputs = at_batch(official, batch)
        with torch.no_grad():
            expected, got = reference(*inputs), model(*inputs)
        assert got.shape == expected.shape, (batch, got.shape, expected.shape)
        torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)


TIED = {  # a reduction over the batch itself: its block (a parameter, or the writer's) is
    # sized for the traced batch, so the module must not take another
    "mean_over_batch": staged_problem("", "F.smooth_l1_loss(x, y)",
                                      "torch.randn(9, 7), torch.randn(9, 7)", "x, y"),
    "softmax_over_batch": problem("torch.softmax(x, dim=0)", "torch.randn(9, 7)"),
}


@pytest.mark.parametrize("name", sorted(TIED))
def test_a_kernel_tied_to_its_shape_says_so_and_names_it(name, tmp_path, run):
    candidate = candidate_for(TIED[name])
    assert not travel.takes_any_batch(candidate)
    module = load_candidate(candidate, tmp_path)
    args = [torch.randn(20, 7) for _ in range(2 if "mean" in name else 1)]
    with pytest.raises(ValueError, match=r"generated for x of shape \(9, 7\).*verified only"):
        module.ModelNew()(*args)


def test_a_traveling_kernel_still_refuses_other_row_lengths(tmp_path, run):
    candidate = candidate_for(CASES["rows_softmax"])
    module = load_candidate(candidate, tmp_path)
    with pytest.raises(ValueError, match=r"takes x of shape \(B, 37\) for any batch size"):
        module.ModelNew()(torch.randn(4, 64))


def test_renders_that_differ_inside_a_kernel_do_not_travel():
    base = "K = 4\n\nclass ModelNew:\n    def forward(self, x):\n        return (4, 8)\n"
    other = base.replace("K = 4", "K = 5").replace("(4, 8)", "(5, 8)")
    assert travel._merge([(4, base), (5, other), (11, other.replace("5", "11"))], "x") is None
    merged = travel._merge([(4, base.replace("K = 4", "K = 1")),
                            (5, other.replace("K = 5", "K = 1")),
                            (11, other.replace("K = 5", "K = 1").replace("(5, 8)", "(11, 8)"))],
                           "x")
    assert "return (kh_B, 8)" in merged


def test_only_affine_literals_follow_the_batch():
    assert travel._affine([4, 5, 11], ["8", "10", "22"]) == "(kh_B * 2)"  # `x % 8` stays x % (B*2)
    assert travel._affine([4, 5, 11], ["7", "8", "14"]) == "(kh_B + 3)"
    assert travel._affine([4, 5, 11], ["4", "8", "16"]) is None  # a power of two
    assert travel._affine([4, 5, 11], ["0.25", "0.2", "0.09"]) is None



def test_proposals_say_which_shapes_they_take():
    """Through the real synthesizer (its sandboxed probe traces the other batch sizes)."""
    import random

    from .conftest import library_source
    from .test_offline_moves import request, root_view

    source = library_source("softmax")
    proposals = OfflineSynthesizer().propose(request(source, root_view(source)), 2,
                                             random.Random(0))
    assert proposals and all("takes any batch size (generated for x (32, 256))" in p.notes
                             for p in proposals), [p.notes for p in proposals]
    assert all(travel.takes_any_batch(p.source) for p in proposals)
