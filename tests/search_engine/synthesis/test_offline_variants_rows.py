"""Variants of row-wise ops, norms, reductions, scans and losses the way KernelBench writes
them and plausible variations of it (module, functional and method forms; weights,
smoothing, ignored classes, probability targets; NaN-aware and index-returning reductions;
cummax / cummin / logcumsumexp with ties and chunk carries): each is covered and its
candidate matches the reference with the default interpreter and H200 parameters. Shapes
are tiny and odd."""

from __future__ import annotations

import pytest

from .conftest import assert_default_kernel_matches, traced_analysis
from .test_offline_staged import problem

R = "torch.randn"
SIGNS = "torch.randint(0, 2, ({},)).float() * 2 - 1"
CLASSES = "torch.randint(0, 7, (9,))"

CASES = {
    # norms
    "rmsnorm_module": problem("self.n = nn.RMSNorm((3, 5), eps=1e-4)", "self.n(x)",
                              f"{R}(2, 3, 5)"),
    "rms_norm_functional": problem("", "F.rms_norm(x, (9,))", f"{R}(4, 9)"),
    "normalize_p1": problem("", "F.normalize(x, p=1.0, dim=-1)", f"{R}(3, 4, 9)"),
    "linalg_norms": problem("", "torch.linalg.vector_norm(x, ord=3, dim=1) + "
                            "torch.linalg.norm(x, dim=1)", f"{R}(4, 9)"),
    "local_response_norm": problem("self.n = nn.LocalResponseNorm(4, alpha=1e-2, beta=0.5, "
                                   "k=2.0)", "self.n(x)", f"{R}(2, 6, 5)"),
    # reductions
    "any_all": problem("", "torch.any(x > 1.0, dim=1).float() + torch.all(x > -1.5, dim=1)",
                       f"{R}(5, 9)"),
    "var_mean": problem("", "torch.var_mean(x, dim=1)[0] + torch.var(x, 1, False)",
                        f"{R}(4, 11)"),
    "argmax_flattened": problem("", "torch.argmax(x)", f"{R}(5, 7)"),
    "count_nonzero": problem("", "torch.count_nonzero(x > 0.5, dim=1)", f"{R}(5, 7)"),
    "nanmean": problem("", "torch.nanmean(torch.where(x > 1.0, float('nan'), x), dim=1)",
                       f"{R}(4, 9)"),
    "aminmax": problem("", "torch.aminmax(x, dim=0, keepdim=True).max", f"{R}(9, 4)"),
    "softmin": problem("self.s = nn.Softmin(dim=1)", "self.s(x)", f"{R}(5, 13)"),
    "special_logsumexp": problem("", "torch.special.logsumexp(x, dim=(1, 2))",
                                 f"{R}(3, 4, 5)"),
    # scans (the interpreter's chunk is 64: 77 and 150 carry across chunks)
    "cummax_indices": problem("", "torch.cummax(x, dim=1)[1]",
                              "torch.randint(0, 5, (4, 150)).float()"),
    "cummin_values_dim0": problem("", "torch.cummin(x, 0).values * 2.0", f"{R}(77, 3)"),
    "logcumsumexp": problem("", "torch.logcumsumexp(x, dim=0)", f"{R}(77, 3)"),
    # losses
    "ce_weight_smoothing": problem(
        "self.l = nn.CrossEntropyLoss(weight=torch.rand(7) + 0.5, label_smoothing=0.15)",
        "self.l(x, t)", f"{R}(9, 7), {CLASSES}", "x, t"),
    "ce_ignore_index": problem("", "F.cross_entropy(x, t, ignore_index=2, label_smoothing=0.1)",
                               f"{R}(13, 5), torch.randint(0, 5, (13,))", "x, t"),
    "ce_probabilities": problem("", "F.cross_entropy(x, y, label_smoothing=0.2)",
                                f"{R}(9, 7), torch.rand(9, 7).softmax(-1)", "x, y"),
    "ce_spatial": problem("", "F.cross_entropy(x, t, reduction='sum')",
                          f"{R}(2, 5, 3, 4), torch.randint(0, 5, (2, 3, 4))", "x, t"),
    "nll_weight": problem("self.register_buffer('w', torch.rand(7) + 0.5)",
                          "F.nll_loss(F.log_softmax(x, 1), t, weight=self.w)",
                          f"{R}(9, 7), {CLASSES}", "x, t"),
    "bce": problem("self.l = nn.BCELoss(reduction='sum')", "self.l(x, y)",
                   "torch.rand(9, 7) * 0.9 + 0.05, torch.rand(9, 7)", "x, y"),
    "bce_logits_pos_weight": problem(
        "self.l = nn.BCEWithLogitsLoss(pos_weight=torch.rand(7) + 0.5)", "self.l(x, y)",
        f"{R}(9, 7), torch.rand(9, 7)", "x, y"),
    "margin_ranking": problem("", "F.margin_ranking_loss(x, y, t, margin=0.3)",
                              f"{R}(17), {R}(17), {SIGNS.format(17)}", "x, y, t"),
    "hinge_embedding": problem("", "F.hinge_embedding_loss(x, t, margin=0.5)",
                               f"{R}(5, 7), {SIGNS.format('5, 7')}", "x, t"),
    "soft_margin": problem("self.l = nn.SoftMarginLoss()", "self.l(x, t)",
                           f"{R}(17), {SIGNS.format(17)}", "x, t"),
    "cosine_embedding": problem("", "F.cosine_embedding_loss(x, y, t, margin=0.2)",
                                f"{R}(9, 7), {R}(9, 7), {SIGNS.format(9)}", "x, y, t"),
    "multi_margin_p2": problem("self.l = nn.MultiMarginLoss(p=2, margin=0.5)", "self.l(x, t)",
                               f"{R}(9, 7), {CLASSES}", "x, t"),
    "multilabel_soft_margin": problem("", "F.multilabel_soft_margin_loss(x, y)",
                                      f"{R}(5, 7), torch.randint(0, 2, (5, 7)).float()",
                                      "x, y"),
    "poisson_nll_full": problem("self.l = nn.PoissonNLLLoss(log_input=False, full=True)",
                                "self.l(x, y)", "torch.rand(5, 7) + 0.1, torch.rand(5, 7) * 3",
                                "x, y"),
    "triplet_swap_p3": problem("", "F.triplet_margin_loss(a, p, n, swap=True, p=3)",
                               f"{R}(9, 7), {R}(9, 7), {R}(9, 7)", "a, p, n"),
}


local_analysis = traced_analysis


@pytest.mark.parametrize("target", ["interpreter", "h200"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_row_variants_match_the_reference(name, target, tmp_path):
    assert_default_kernel_matches(CASES[name], target, tmp_path, seeds=(1,))
