"""Forms KernelBench's level-3 architectures use that were refused or broke the candidate:
`F.linear` by keywords (Swin V2), a mask's `~mask` and `logical_not` (Mamba2's segment sums),
and a helper module class with only a forward (MiniGPT's NewGELU; the level-3 forms test
runs that one in `minigpt_block`). Each matches torch on the interpreter."""

from __future__ import annotations

import pytest

from .test_offline_fuzz_forms import judge


def problem(init: list[str], forward: list[str], inputs: str, args: str = "x") -> str:
    init_lines = "".join(f"        {line}\n" for line in init)
    body = "".join(f"        {line}\n" for line in forward)
    return ("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
            "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            f"{init_lines}\n    def forward(self, {args}):\n{body}\n\n"
            f"def get_inputs():\n    return [{inputs}]\n\n\n"
            "def get_init_inputs():\n    return []\n")


FORMS = {
    "linear_by_keywords": problem(
        ["self.w = nn.Parameter(torch.randn(6, 5))", "self.b = nn.Parameter(torch.randn(6))"],
        ["return F.linear(input=x, weight=self.w, bias=self.b)"], "torch.randn(3, 5)"),
    "inverted_mask": problem(
        [], ["keep = x > 0", "return torch.where(~keep, x * 2.0, x - 1.0)"],
        "torch.randn(4, 7)"),
    "logical_not_of_values": problem(
        [], ["return torch.logical_not(x).float() + x"], "torch.randint(0, 3, (4, 5)).float()"),
}


@pytest.mark.parametrize("name", sorted(FORMS))
def test_level3_form_gets_a_correct_kernel(name, tmp_path):
    assert judge(FORMS[name], tmp_path) != "refused"


def test_bitwise_not_of_integers_is_refused_by_name(tmp_path):
    source = problem([], ["return (~x).float()"], "torch.randint(0, 5, (4, 5))")
    assert judge(source, tmp_path) == "refused"


def test_a_batched_matmuls_epilogue_reads_a_value_per_batch(tmp_path):
    """Swin V2's per-head logit scale: an epilogue operand that varies only with the batch
    index is one element a program, loaded as a tile of the output's shape."""
    source = problem(["self.scale = nn.Parameter(torch.rand(3, 1, 1) + 0.5)"],
                     ["return torch.matmul(a, b) * self.scale"],
                     "torch.randn(2, 3, 5, 4), torch.randn(2, 3, 4, 6)", args="a, b")
    assert judge(source, tmp_path) != "refused"
