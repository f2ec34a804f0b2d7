import subprocess
import sys

import torch
import torch.nn as nn
import triton
import triton.language as tl

MARKER = ""  # replaced by the test: the grandchild writes its pid there


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        subprocess.Popen([sys.executable, "-c", "import os, time, pathlib; "
                          f"pathlib.Path({MARKER!r}).write_text(str(os.getpid())); time.sleep(600)"])
        y = torch.empty_like(x)
        copy_kernel[(1,)](x, y, x.numel(), BLOCK=16)
        while True:
            pass
