import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * stride + cols, diff * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.bias = nn.Parameter(torch.zeros(hidden))
        self.eps = 1e-5

    def load_state_dict(self, state_dict, strict=True, assign=False):
        # The reference keeps its parameters under `norm.`; accept both layouts.
        renamed = {k.removeprefix("norm."): v for k, v in state_dict.items()}
        return super().load_state_dict(renamed, strict=strict, assign=assign)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n_rows, n_cols = x.shape
        block = triton.next_power_of_2(n_cols)
        warps = 4 if block <= 2048 else (8 if block <= 8192 else 16)
        layernorm_kernel[(n_rows,)](x, self.weight, self.bias, y, n_cols, x.stride(0), self.eps,
                                    BLOCK=block, num_warps=warps)
        return y
