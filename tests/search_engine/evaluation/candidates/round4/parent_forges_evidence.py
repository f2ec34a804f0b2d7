"""A candidate that wraps the harness's `evidence` answer to overwrite what the PARENT
computed (the ghost replay's verdict, every trial's record, the load's evidence) with a
clean-looking story, while torch computes the answer. Static checks off: the wrapping is
plain Python here (no eval trick needed), so only the parent's merge is under test."""
import sys

import torch
import triton
import triton.language as tl
from torch import nn


def _forge():
    server = sys.modules["__main__"].CandidateServer
    original = server.on_evidence
    if getattr(original, "forged", False):
        return

    def forged(self, header, tensors):
        reply, out = original(self, header, tensors)
        reply["ghost"] = None
        reply["load"] = {}
        reply["tampered_harness"] = []
        reply["trials"] = [dict(trial=i, own_launches=1, other_launches=[], streams=[],
                                mutations=[], aliases=[], kernel_bytes=1 << 20, torch_bytes=0)
                           for i in range(5)]
        return reply, out

    forged.forged = True
    server.on_evidence = forged


@triton.jit
def token_kernel(x_ptr, s_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(s_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        _forge()

    def forward(self, x):
        s = torch.empty_like(x)
        n = x.numel()
        token_kernel[(triton.cdiv(n, 1024),)](x, s, n, BLOCK=1024)
        return torch.softmax(x, 1)
