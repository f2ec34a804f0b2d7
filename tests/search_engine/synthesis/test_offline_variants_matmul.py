"""Matmul-area problems the offline synthesizer once refused or got wrong: 1-D operands
(matrix-vector, vector-matrix, dot, outer), addmm-style ``beta * c + alpha * a @ b``, einsums
(a row-wise dot, one or three operands, an index summed in one operand), nn.Bilinear,
nn.MultiheadAttention, grouped-query attention, attention masks, a GEMM epilogue that reads
the matmul's own input (a residual) and a forward that computes with its tensors' sizes
(minGPT's causal buffer, a mask made with ``torch.ones(q.size(1), ...)``). Each runs
in-process against the reference with the interpreter's and the H200's default parameters.
Shapes are tiny and odd."""

from __future__ import annotations

import pytest

from benchmarks.offline_variants.harness import problem as variant_problem

from .conftest import assert_default_kernel_matches, traced_analysis


def problem(init: str, forward: str, inputs: str, args: str = "x") -> str:
    """`forward` is the whole forward body (see `returns`); `math` is imported."""
    return variant_problem(init, "", inputs, args, extra="import math\n\n", body=forward)


def returns(expression: str) -> str:
    return f"        return {expression}"


R = "torch.randn"
CASES = {
    "matrix_vector": problem("", returns("torch.matmul(a, v)"), f"{R}(9, 13), {R}(13)", "a, v"),
    "vector_matrix": problem("", returns("v @ a"), f"{R}(13), {R}(13, 7)", "v, a"),
    "batched_matrix_vector": problem("", returns("torch.matmul(a, v)"),
                                     f"{R}(3, 7, 11), {R}(11)", "a, v"),
    "mv": problem("", returns("torch.mv(a, v)"), f"{R}(9, 13), {R}(13)", "a, v"),
    "dot": problem("", returns("torch.dot(a, b)"), f"{R}(13), {R}(13)", "a, b"),
    "outer": problem("", returns("torch.outer(a, b)"), f"{R}(7), {R}(5)", "a, b"),
    "einsum_row_dot": problem("", returns("torch.einsum('bi,bi->b', a, b)"),
                              f"{R}(7, 13), {R}(7, 13)", "a, b"),
    "addmm": problem("", returns("torch.addmm(c, a, b, beta=0.5, alpha=2.0)"),
                     f"{R}(5), {R}(7, 11), {R}(11, 5)", "c, a, b"),
    "baddbmm": problem("", returns("torch.baddbmm(c, a, b, beta=0.25, alpha=1.5)"),
                       f"{R}(3, 7, 5), {R}(3, 7, 11), {R}(3, 11, 5)", "c, a, b"),
    "addmv": problem("", returns("torch.addmv(c, a, v, beta=2.0, alpha=0.5)"),
                     f"{R}(7), {R}(7, 11), {R}(11)", "c, a, v"),
    "gemm_residual_of_the_input": problem("self.fc = nn.Linear(13, 13)",
                                          returns("torch.relu(self.fc(x)) + x"),
                                          f"{R}(2, 5, 13)"),
    "sdpa_bool_mask": problem("", returns("F.scaled_dot_product_attention(q, k, v, attn_mask=m)"),
                              f"{R}(1, 2, 7, 8), {R}(1, 2, 9, 8), {R}(1, 2, 9, 8), "
                              "torch.rand(7, 9) > 0.3", "q, k, v, m"),
    "sdpa_float_mask": problem("", returns("F.scaled_dot_product_attention(q, k, v, "
                                           "attn_mask=m, scale=0.4)"),
                               f"{R}(2, 7, 8), {R}(2, 9, 8), {R}(2, 9, 5), {R}(1, 9)",
                               "q, k, v, m"),
    "mingpt_causal_buffer": problem(
        "self.register_buffer('bias', torch.tril(torch.ones(12, 12)).view(1, 1, 12, 12))",
        "        T = q.size(-2)\n"
        "        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))\n"
        "        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))\n"
        "        return F.softmax(att, dim=-1) @ v",
        f"{R}(1, 2, 9, 8), {R}(1, 2, 9, 8), {R}(1, 2, 9, 8)", "q, k, v"),
    "sdpa_grouped_query_causal": problem(
        "", returns("F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)"),
        f"{R}(2, 6, 7, 8), {R}(2, 2, 7, 8), {R}(2, 2, 7, 5)", "q, k, v"),
    "einsum_three_operands": problem("", returns("torch.einsum('ij,jk,kl->il', a, b, c)"),
                                     f"{R}(5, 7), {R}(7, 6), {R}(6, 3)", "a, b, c"),
    "einsum_index_summed_in_one_operand": problem(
        "", returns("torch.einsum('bij,bk->bik', a, b)"), f"{R}(3, 5, 7), {R}(3, 4)", "a, b"),
    "einsum_one_operand_implicit": problem("", returns("torch.einsum('ji', a) * 2.0"),
                                           f"{R}(5, 7)", "a"),
    "bilinear": problem("self.bl = nn.Bilinear(6, 5, 4)", returns("self.bl(x, y)"),
                        f"{R}(2, 3, 6), {R}(2, 3, 5)", "x, y"),
    "multihead_attention_seq_first": problem(
        "self.mha = nn.MultiheadAttention(8, 2)", returns("self.mha(x, y, y)[0]"),
        f"{R}(5, 2, 8), {R}(7, 2, 8)", "x, y"),
    "causal_mask_made_in_forward": problem(
        "", "        s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))\n"
        "        mask = torch.triu(torch.ones(q.size(1), k.size(1), dtype=torch.bool), "
        "diagonal=1)\n"
        "        return torch.softmax(s.masked_fill(mask, float('-inf')), dim=-1) @ v",
        f"{R}(2, 9, 8), {R}(2, 9, 8), {R}(2, 9, 8)", "q, k, v"),
    "sdpa_bool_mask_made_in_forward": problem(
        "", "        m = torch.ones(q.size(-2), k.size(-2), dtype=torch.bool).tril(diagonal=2)\n"
        "        return F.scaled_dot_product_attention(q, k, v, attn_mask=m)",
        f"{R}(1, 2, 7, 8), {R}(1, 2, 9, 8), {R}(1, 2, 9, 8)", "q, k, v"),
}


local_analysis = traced_analysis


@pytest.mark.parametrize("target", ["interpreter", "h200"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_matmul_variants_match_the_reference(name, target, tmp_path):
    assert_default_kernel_matches(CASES[name], target, tmp_path)


def test_a_residual_of_the_input_stays_in_the_fused_gemm():
    an = local_analysis(CASES["gemm_residual_of_the_input"])
    assert an.family == "matmul"  # one tiled GEMM with the residual in its epilogue


def test_attention_masks_stay_in_the_flash_kernel():
    for name in ("sdpa_bool_mask", "sdpa_float_mask", "sdpa_bool_mask_made_in_forward",
                 "multihead_attention_seq_first"):
        assert local_analysis(CASES[name]).family == "attention", name
