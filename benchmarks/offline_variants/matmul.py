"""Offline-synthesizer variants: matmuls, GEMM epilogues, einsum, attention (see benchmarks/offline_variants/__main__.py)."""

from .harness import problem

R = "torch.randn"
CASES = {
 # plain matmuls and operand layouts
 "mm_fn": problem("", "torch.mm(a, b)", f"{R}(7, 11), {R}(11, 5)", "a, b"),
 "matmul_at": problem("", "a @ b", f"{R}(9, 13), {R}(13, 6)", "a, b"),
 "matmul_AT_B": problem("", "torch.matmul(a.T, b)", f"{R}(11, 7), {R}(11, 5)", "a, b"),
 "matmul_A_BT": problem("", "torch.matmul(a, b.T)", f"{R}(7, 11), {R}(5, 11)", "a, b"),
 "matmul_both_T": problem("", "a.t() @ b.t()", f"{R}(11, 7), {R}(5, 11)", "a, b"),
 "matvec": problem("", "torch.matmul(a, b)", f"{R}(9, 13), {R}(13, 1)", "a, b"),
 "matvec_1d": problem("", "torch.matmul(a, v)", f"{R}(9, 13), {R}(13)", "a, v"),
 "vecmat_1d": problem("", "torch.matmul(v, a)", f"{R}(13), {R}(13, 7)", "v, a"),
 "mv": problem("", "torch.mv(a, v)", f"{R}(9, 13), {R}(13)", "a, v"),
 "tensor3d_matrix": problem("", "torch.matmul(a, b)", f"{R}(3, 7, 11), {R}(11, 5)", "a, b"),
 "bmm": problem("", "torch.bmm(a, b)", f"{R}(3, 7, 11), {R}(3, 11, 5)", "a, b"),
 "bmm_transposed_b": problem("", "torch.bmm(a, b.transpose(1, 2))", f"{R}(3, 7, 11), {R}(3, 5, 11)", "a, b"),
 "broadcast4d": problem("", "torch.matmul(a, b)", f"{R}(2, 3, 5, 7), {R}(2, 3, 7, 6)", "a, b"),
 "broadcast4d_b3d": problem("", "torch.matmul(a, b)", f"{R}(2, 3, 5, 7), {R}(3, 7, 6)", "a, b"),
 "matmul_scalar": problem("", "torch.matmul(a, b) * 0.5", f"{R}(7, 11), {R}(11, 5)", "a, b"),
 "scalar_times_A_matmul": problem("", "(a * 3.0) @ b", f"{R}(7, 11), {R}(11, 5)", "a, b"),
 "diag_matmul_right": problem("", "a @ torch.diag(d)", f"{R}(7, 9), {R}(9)", "a, d"),
 "tril_matmul": problem("", "torch.tril(torch.matmul(a, b))", f"{R}(9, 9), {R}(9, 9)", "a, b"),
 "triu_inputs_matmul": problem("", "torch.matmul(torch.triu(a), torch.triu(b))", f"{R}(9, 9), {R}(9, 9)", "a, b"),
 # einsum
 "einsum_ij_jk": problem("", "torch.einsum('ij,jk->ik', a, b)", f"{R}(7, 11), {R}(11, 5)", "a, b"),
 "einsum_bmm": problem("", "torch.einsum('bij,bjk->bik', a, b)", f"{R}(3, 7, 11), {R}(3, 11, 5)", "a, b"),
 "einsum_qk": problem("", "torch.einsum('bhqd,bhkd->bhqk', q, k)", f"{R}(2, 3, 5, 8), {R}(2, 3, 7, 8)", "q, k"),
 "einsum_transposed": problem("", "torch.einsum('ki,kj->ij', a, b)", f"{R}(11, 7), {R}(11, 5)", "a, b"),
 "einsum_out_T": problem("", "torch.einsum('ik,kj->ji', a, b)", f"{R}(7, 11), {R}(11, 5)", "a, b"),
 "einsum_rowdot": problem("", "torch.einsum('bi,bi->b', a, b)", f"{R}(7, 13), {R}(7, 13)", "a, b"),
 # addmm / baddbmm
 "addmm": problem("", "torch.addmm(c, a, b, beta=0.5, alpha=2.0)", f"{R}(7, 5), {R}(7, 11), {R}(11, 5)", "c, a, b"),
 "addmm_bias_row": problem("", "torch.addmm(c, a, b)", f"{R}(5), {R}(7, 11), {R}(11, 5)", "c, a, b"),
 "baddbmm": problem("", "torch.baddbmm(c, a, b, beta=0.25, alpha=1.5)", f"{R}(3, 7, 5), {R}(3, 7, 11), {R}(3, 11, 5)", "c, a, b"),
 # F.linear / nn.Linear
 "flinear_bias": problem("", "F.linear(x, w, b)", f"{R}(7, 11), {R}(5, 11), {R}(5)", "x, w, b"),
 "flinear_nobias": problem("", "F.linear(x, w)", f"{R}(7, 11), {R}(5, 11)", "x, w"),
 "linear_3d_input": problem("self.fc = nn.Linear(11, 6)", "self.fc(x)", f"{R}(2, 5, 11)"),
 "linear_nobias": problem("self.fc = nn.Linear(11, 6, bias=False)", "self.fc(x)", f"{R}(7, 11)"),
 # level-2 GEMM epilogues, KernelBench-style init args
 "gemm_mul_leaky": problem("self.fc = nn.Linear(i, o)\nself.s = s\nself.slope = slope", None, f"{R}(7, 13)",
                           init_args=", i, o, s, slope", init_inputs="[13, 9, 2.0, 0.1]"),
 "gemm_div_bias_sub": problem("self.fc = nn.Linear(13, 9)\nself.bias = nn.Parameter(torch.randn(9))", "(self.fc(x) / 3.0 + self.bias) - 0.5", f"{R}(7, 13)"),
 "gemm_gelu": problem("self.fc = nn.Linear(13, 9)", "F.gelu(self.fc(x))", f"{R}(7, 13)"),
 "gemm_silu": problem("self.fc = nn.Linear(13, 9)", "F.silu(self.fc(x))", f"{R}(7, 13)"),
 "gemm_swish": problem("self.fc = nn.Linear(13, 9)", "self.fc(x) * torch.sigmoid(self.fc(x))", f"{R}(7, 13)"),
 "gemm_mish": problem("self.fc = nn.Linear(13, 9)", "F.mish(self.fc(x))", f"{R}(7, 13)"),
 "gemm_hardtanh": problem("self.fc = nn.Linear(13, 9)\nself.ht = nn.Hardtanh(-0.5, 0.5)", "self.ht(self.fc(x))", f"{R}(7, 13)"),
 "gemm_clamp_min_max": problem("self.fc = nn.Linear(13, 9)", "torch.clamp(self.fc(x), min=-0.3, max=0.4)", f"{R}(7, 13)"),
 "gemm_sigmoid_tanh": problem("self.fc = nn.Linear(13, 9)", "torch.tanh(torch.sigmoid(self.fc(x)))", f"{R}(7, 13)"),
 "gemm_residual": problem("self.fc = nn.Linear(13, 13)", "self.fc(x) + x", f"{R}(7, 13)"),
 "gemm_residual_detach": problem("self.fc = nn.Linear(13, 9)", None, f"{R}(7, 13)"),
 "gemm_sum_keepdim": problem("self.fc = nn.Linear(13, 9)", "torch.sum(self.fc(x), dim=1, keepdim=True)", f"{R}(7, 13)"),
 "gemm_mean": problem("self.fc = nn.Linear(13, 9)", "self.fc(x).mean(dim=1)", f"{R}(7, 13)"),
 "gemm_max_keepdim": problem("self.fc = nn.Linear(13, 9)", "torch.max(self.fc(x), dim=1, keepdim=True)[0]", f"{R}(7, 13)"),
 "gemm_logsumexp": problem("self.fc = nn.Linear(13, 9)", "torch.logsumexp(self.fc(x), dim=1, keepdim=True)", f"{R}(7, 13)"),
 "gemm_softmax": problem("self.fc = nn.Linear(13, 9)", "torch.softmax(self.fc(x), dim=1)", f"{R}(7, 13)"),
 "gemm_batchnorm": problem("self.fc = nn.Linear(13, 9)\nself.bn = nn.BatchNorm1d(9)\nself.bn.running_mean.uniform_(-1, 1)\nself.bn.running_var.uniform_(0.5, 2)\nself.eval()", "self.bn(self.fc(x))", f"{R}(7, 13)"),
 "gemm_layernorm": problem("self.fc = nn.Linear(13, 9)\nself.ln = nn.LayerNorm(9)", "self.ln(self.fc(x))", f"{R}(7, 13)"),
 "gemm_groupnorm_silu": problem("self.fc = nn.Linear(13, 12)\nself.gn = nn.GroupNorm(3, 12)", "F.silu(self.gn(self.fc(x)))", f"{R}(7, 13)"),
 "gemm_dropout": problem("self.fc = nn.Linear(13, 9)\nself.d = nn.Dropout(0.3)\nself.eval()", "self.d(self.fc(x)) * 2.0", f"{R}(7, 13)"),
 "mlp": problem("self.fc1 = nn.Linear(13, 10)\nself.fc2 = nn.Linear(10, 6)", "self.fc2(torch.relu(self.fc1(x)))", f"{R}(7, 13)"),
 "gemm_min_const": problem("self.fc = nn.Linear(13, 9)", "torch.min(self.fc(x), torch.tensor(0.2))", f"{R}(7, 13)"),
 "gemm_maximum_const": problem("self.fc = nn.Linear(13, 9)", "torch.clamp_min(self.fc(x), 0.1) - torch.max(self.fc(x), dim=1, keepdim=True).values", f"{R}(7, 13)"),
 # attention
 "sdpa_causal_4d": problem("", "F.scaled_dot_product_attention(q, k, v, is_causal=True)", f"{R}(1, 2, 9, 8), {R}(1, 2, 9, 8), {R}(1, 2, 9, 8)", "q, k, v"),
 "sdpa_scale": problem("", "F.scaled_dot_product_attention(q, k, v, scale=0.3)", f"{R}(2, 7, 8), {R}(2, 11, 8), {R}(2, 11, 6)", "q, k, v"),
 "sdpa_bool_mask": problem("", "F.scaled_dot_product_attention(q, k, v, attn_mask=m)", f"{R}(1, 2, 7, 8), {R}(1, 2, 9, 8), {R}(1, 2, 9, 8), torch.rand(7, 9) > 0.3", "q, k, v, m"),
 "sdpa_float_mask": problem("", "F.scaled_dot_product_attention(q, k, v, attn_mask=m)", f"{R}(1, 2, 7, 8), {R}(1, 2, 9, 8), {R}(1, 2, 9, 8), {R}(1, 2, 7, 9)", "q, k, v, m"),
 "sdpa_causal_3d_scale": problem("", "F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.5)", f"{R}(3, 9, 8), {R}(3, 9, 8), {R}(3, 9, 8)", "q, k, v"),
 "attn_written_sqrt": problem("", "torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), dim=-1) @ v", f"{R}(1, 2, 9, 8), {R}(1, 2, 9, 8), {R}(1, 2, 9, 8)", "q, k, v", extra="import math\n"),
 "attn_written_causal": problem("", None, f"{R}(2, 9, 8), {R}(2, 9, 8), {R}(2, 9, 8)", "q, k, v", extra="import math\n"),
}

def full(name, src):
    CASES[name] = src

full("gemm_mul_leaky", CASES["gemm_mul_leaky"].replace("return None", "return F.leaky_relu(self.fc(x) * self.s, negative_slope=self.slope)"))
full("gemm_residual_detach", CASES["gemm_residual_detach"].replace(
    "return None", "y = self.fc(x)\n        return y * 1.5 + y.clone().detach()"))
full("attn_written_causal", CASES["attn_written_causal"].replace(
    "return None", "s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))\n"
    "        mask = torch.triu(torch.ones(q.size(1), k.size(1), dtype=torch.bool), diagonal=1)\n"
    "        s = s.masked_fill(mask, float('-inf'))\n"
    "        return torch.softmax(s, dim=-1) @ v"))

MORE = {
 "gemm_fdropout_eval": problem("self.fc = nn.Linear(13, 9)", "F.dropout(self.fc(x), p=0.2, training=False) + 1.0", f"{R}(7, 13)"),
 "dot": problem("", "torch.dot(a, b)", f"{R}(13), {R}(13)", "a, b"),
 "outer": problem("", "torch.outer(a, b)", f"{R}(7), {R}(5)", "a, b"),
 "addmv": problem("", "torch.addmv(c, a, v, beta=2.0, alpha=0.5)", f"{R}(7), {R}(7, 11), {R}(11)", "c, a, v"),
 "batched_matvec": problem("", "torch.matmul(a, v)", f"{R}(3, 7, 11), {R}(11)", "a, v"),
 "gemm_scale_param_bias": problem("self.fc = nn.Linear(13, 9, bias=False)\nself.scale = nn.Parameter(torch.randn(9))\nself.bias = nn.Parameter(torch.randn(9))", "self.fc(x) * self.scale + self.bias", f"{R}(7, 13)"),
 "gemm_residual_3d": problem("self.fc = nn.Linear(13, 13)", "torch.relu(self.fc(x)) + x", f"{R}(2, 5, 13)"),
 "mlp_gelu_residual": problem("self.fc1 = nn.Linear(13, 20)\nself.fc2 = nn.Linear(20, 13)", "x + self.fc2(F.gelu(self.fc1(x)))", f"{R}(7, 13)"),
 "sdpa_dims3_causal_rect": problem("", "F.scaled_dot_product_attention(q, k, v, is_causal=True)", f"{R}(2, 7, 8), {R}(2, 11, 8), {R}(2, 11, 6)", "q, k, v"),
 "mingpt_attention": None,
}
MORE["mingpt_attention"] = problem("self.register_buffer('bias', torch.tril(torch.ones(12, 12)).view(1, 1, 12, 12))", None, f"{R}(1, 2, 9, 8), {R}(1, 2, 9, 8), {R}(1, 2, 9, 8)", "q, k, v", extra="import math\n").replace(
    "return None", "T = q.size(-2)\n        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))\n"
    "        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))\n"
    "        att = F.softmax(att, dim=-1)\n        return att @ v")
CASES.update(MORE)

EXTRA = {
 "mingpt_block": problem("self.c_attn = nn.Linear(8, 24)\nself.c_proj = nn.Linear(8, 8)\nself.n_head = 2\nself.register_buffer('bias', torch.tril(torch.ones(16, 16)).view(1, 1, 16, 16))", None, f"{R}(2, 7, 8)", extra="import math\n"),
 "sdpa_mask_in_forward": problem("", None, f"{R}(1, 2, 7, 8), {R}(1, 2, 9, 8), {R}(1, 2, 9, 8)", "q, k, v"),
 "einsum_attn_pv": problem("", "torch.einsum('bhqk,bhkd->bhqd', torch.softmax(torch.einsum('bhqd,bhkd->bhqk', q, k) * 0.3, dim=-1), v)", f"{R}(1, 2, 5, 8), {R}(1, 2, 7, 8), {R}(1, 2, 7, 6)", "q, k, v"),
 "view_by_size": problem("self.fc = nn.Linear(12, 5)", "self.fc(x.view(x.size(0), -1))", f"{R}(3, 4, 3)"),
 "linear_chain_sizes": problem("self.fc = nn.Linear(12, 5)", None, f"{R}(3, 4, 3)"),
}
EXTRA["mingpt_block"] = EXTRA["mingpt_block"].replace("return None", """B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)""")
EXTRA["sdpa_mask_in_forward"] = EXTRA["sdpa_mask_in_forward"].replace("return None", """m = torch.ones(q.size(-2), k.size(-2), dtype=torch.bool).tril(diagonal=2)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m)""")
EXTRA["linear_chain_sizes"] = EXTRA["linear_chain_sizes"].replace("return None", """b = x.shape[0]
        y = self.fc(x.reshape(b, -1))
        return torch.zeros(b, 5) + torch.sigmoid(y)""")
CASES.update(EXTRA)

THIRD = {
 "linear3d_gelu_layernorm": problem("self.fc = nn.Linear(11, 10)\nself.ln = nn.LayerNorm(10)", "self.ln(F.gelu(self.fc(x)))", f"{R}(2, 5, 11)"),
 "flinear_transposed_x": problem("", "F.linear(x.t(), w, b)", f"{R}(11, 7), {R}(5, 11), {R}(5)", "x, w, b"),
 "matmul_strided_input": problem("", "a[:, ::2] @ b", f"{R}(7, 22), {R}(11, 5)", "a, b"),
 "bmm_softmax": problem("", "torch.softmax(torch.bmm(a, b), dim=-1)", f"{R}(3, 7, 11), {R}(3, 11, 5)", "a, b"),
 "gemm_sum_dim0": problem("self.fc = nn.Linear(13, 9)", "self.fc(x).sum(dim=0)", f"{R}(7, 13)"),
 "gemm_mean_all": problem("self.fc = nn.Linear(13, 9)", "torch.mean(torch.relu(self.fc(x)))", f"{R}(7, 13)"),
 "gemm_softmax_dim0": problem("self.fc = nn.Linear(13, 9)", "torch.softmax(self.fc(x), dim=0)", f"{R}(7, 13)"),
 "gemm_lse_mish": problem("self.fc = nn.Linear(13, 9)", "F.mish(torch.logsumexp(torch.clamp(self.fc(x) * 2.0 + self.fc(x), -3, 3), dim=1, keepdim=True))", f"{R}(7, 13)"),
 "matmul_4d_2d": problem("", "torch.matmul(a, b)", f"{R}(2, 3, 5, 7), {R}(7, 6)", "a, b"),
 "einsum_bij_jk": problem("", "torch.einsum('bij,jk->bik', a, b)", f"{R}(3, 5, 7), {R}(7, 6)", "a, b"),
 "einsum_full_dot": problem("", "torch.einsum('i,i->', a, b)", f"{R}(13), {R}(13)", "a, b"),
 "einsum_hadamard": problem("", "torch.einsum('ij,ij->ij', a, b)", f"{R}(5, 7), {R}(5, 7)", "a, b"),
 "einsum_transpose_only": problem("", "torch.einsum('ij->ji', a) * 2.0", f"{R}(5, 7)", "a"),
 "einsum_bilinear3": problem("self.w = nn.Parameter(torch.randn(4, 6, 5))", "torch.einsum('bn,anm,bm->ba', x, self.w, y)", f"{R}(3, 6), {R}(3, 5)", "x, y"),
 "bilinear_module": problem("self.bl = nn.Bilinear(6, 5, 4)", "self.bl(x, y)", f"{R}(3, 6), {R}(3, 5)", "x, y"),
 "addmm_full_c": problem("", "torch.addmm(c, a, b, alpha=0.5)", f"{R}(7, 5), {R}(7, 11), {R}(11, 5)", "c, a, b"),
 "baddbmm_beta0": problem("", "torch.baddbmm(c, a, b, beta=0.0)", f"{R}(3, 7, 5), {R}(3, 7, 11), {R}(3, 11, 5)", "c, a, b"),
 "gemm_groupnorm_min_bias": problem("self.fc = nn.Linear(13, 12)\nself.gn = nn.GroupNorm(4, 12)\nself.bias = nn.Parameter(torch.randn(1, 12))", "torch.min(self.gn(self.fc(x)), dim=1, keepdim=True)[0] + self.bias", f"{R}(7, 13)"),
 "matmul_param": problem("self.w = nn.Parameter(torch.randn(11, 6))", "torch.tanh(x @ self.w)", f"{R}(7, 11)"),
 "mm_long_k": problem("", "torch.mm(a, b)", f"{R}(5, 301), {R}(301, 3)", "a, b"),
 "sdpa_gqa": problem("", "F.scaled_dot_product_attention(q, k, v, enable_gqa=True)", f"{R}(1, 4, 7, 8), {R}(1, 2, 9, 8), {R}(1, 2, 9, 8)", "q, k, v"),
 "sdpa_gqa_causal_3heads": problem("", "F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)", f"{R}(2, 6, 7, 8), {R}(2, 2, 7, 8), {R}(2, 2, 7, 5)", "q, k, v"),
 "einsum_sum_out": problem("", "torch.einsum('ij->j', a)", f"{R}(5, 7)", "a"),
 "einsum_implicit": problem("", "torch.einsum('ij,jk', a, b)", f"{R}(5, 7), {R}(7, 3)", "a, b"),
 "einsum_sum_one_operand": problem("", "torch.einsum('bij,bk->bik', a, b)", f"{R}(3, 5, 7), {R}(3, 4)", "a, b"),
 "einsum_chain3": problem("", "torch.einsum('ij,jk,kl->il', a, b, c)", f"{R}(5, 7), {R}(7, 6), {R}(6, 3)", "a, b, c"),
 "fbilinear_3d": problem("self.w = nn.Parameter(torch.randn(4, 6, 5))", "F.bilinear(x, y, self.w)", f"{R}(2, 3, 6), {R}(2, 3, 5)", "x, y"),
 "multihead_attention": problem("self.mha = nn.MultiheadAttention(8, 2, batch_first=True)", "self.mha(x, x, x)[0]", f"{R}(2, 5, 8)"),
 "multihead_attention_seq_first": problem("self.mha = nn.MultiheadAttention(8, 2)", "self.mha(x, y, y, need_weights=False)[0]", f"{R}(5, 2, 8), {R}(7, 2, 8)", "x, y"),
 "attn_scores_only": problem("", "torch.softmax(torch.matmul(q, k.transpose(-1, -2)) / 4.0, dim=-1)", f"{R}(2, 7, 8), {R}(2, 9, 8)", "q, k"),
 "gemm_two_outputs_sum": problem("self.a = nn.Linear(13, 9)\nself.b = nn.Linear(13, 9)", "self.a(x) * torch.sigmoid(self.b(x))", f"{R}(7, 13)"),
}
CASES.update(THIRD)
